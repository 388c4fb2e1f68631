#include "trainer/distributed/deadline_watcher.h"

#include <utility>

namespace fabkit::trainer {

DeadlineWatcher::DeadlineWatcher(std::chrono::milliseconds period)
    : period_(period), thread_([this] { loop(); }) {}

DeadlineWatcher::~DeadlineWatcher() {
  {
    const std::lock_guard<std::mutex> lk(m_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void DeadlineWatcher::watch(Watch w) {
  const std::lock_guard<std::mutex> lk(m_);
  added_.push_back(std::move(w));
}

size_t DeadlineWatcher::watched() const {
  const std::lock_guard<std::mutex> lk(m_);
  return added_.size() + looking_;
}

void DeadlineWatcher::loop() {
  std::vector<Watch> held;
  std::unique_lock<std::mutex> lk(m_);
  while (true) {
    cv_.wait_for(lk, period_, [&] { return stop_; });
    if (stop_) return;
    for (Watch& w : added_) held.push_back(std::move(w));
    added_.clear();
    looking_ = held.size();
    // The callbacks run unlocked: watch() from the issuing thread never waits for a device query
    // or an expiry's store traffic.
    lk.unlock();
    std::vector<Watch> still;
    const Clock::time_point now = Clock::now();
    for (Watch& w : held) {
      if (w.completed()) continue;
      if (now >= w.deadline) {
        w.expired();
        continue;
      }
      still.push_back(std::move(w));
    }
    held = std::move(still);
    lk.lock();
    looking_ = held.size();
  }
}

}  // namespace fabkit::trainer
