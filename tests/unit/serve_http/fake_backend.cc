#include "tests/unit/serve_http/fake_backend.h"

#include <algorithm>

namespace fabkit::serve::fake {

FakeBackend::FakeBackend(FakeBackendOptions options) : options_(std::move(options)) {
  worker_ = std::thread([this] { run(); });
}

FakeBackend::~FakeBackend() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

bool FakeBackend::submit(GenerationRequest request, TokenSink sink) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Room for max_batch running and queue_capacity waiting, as a real engine's slots and queue.
  const int64_t held = static_cast<int64_t>(queue_.size() + running_.size()) + stepping_;
  if (held >= options_.max_batch + options_.queue_capacity) return false;
  accepted_.push_back(request);
  totals_.prompt_tokens += request.prompt.size();
  queue_.push_back(Active{std::move(request), std::move(sink), 0});
  changed_.notify_all();
  return true;
}

BackendStats FakeBackend::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  BackendStats s = totals_;
  s.queued = static_cast<int64_t>(queue_.size());
  s.running = static_cast<int64_t>(running_.size()) + stepping_;
  s.queue_capacity = options_.queue_capacity;
  s.max_batch = options_.max_batch;
  return s;
}

std::vector<GenerationRequest> FakeBackend::requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return accepted_;
}

bool FakeBackend::wait_idle(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, timeout,
                           [&] { return queue_.empty() && running_.empty() && stepping_ == 0; });
}

TokenEvent FakeBackend::next_event(Active& a) const {
  TokenEvent e;
  const int64_t i = a.generated;
  if (options_.error_after && i >= *options_.error_after) {
    e.last = true;
    e.finish = FinishReason::kError;
    e.error = "the fake backend failed on purpose";
    return e;
  }
  if (options_.eos_after && i == *options_.eos_after) {
    e.token = options_.eos_token;
  } else if (!options_.script.empty()) {
    e.token = options_.script[i % options_.script.size()];
  } else {
    e.token = a.request.prompt[i % a.request.prompt.size()];
  }
  ++a.generated;
  if (e.token == options_.eos_token ||
      std::find(a.request.stop_token_ids.begin(), a.request.stop_token_ids.end(), e.token) !=
          a.request.stop_token_ids.end()) {
    e.last = true;
    e.finish = FinishReason::kStop;
  } else if (a.generated >= a.request.max_tokens) {
    e.last = true;
    e.finish = FinishReason::kLength;
  }
  return e;
}

void FakeBackend::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait_for(lock, options_.step_interval,
                      [&] { return stopping_ || (!queue_.empty() || !running_.empty()); });
    if (stopping_) return;
    // Between steps, queued requests join the batch.
    while (!queue_.empty() && static_cast<int64_t>(running_.size()) < options_.max_batch) {
      running_.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    if (running_.empty()) continue;
    // (stepping_ counts the batch while its sinks run unlocked, so stats() and submit() see it.)
    // One decode step: one event per running request, sinks called without the lock (they may
    // block briefly on their own queue).
    std::vector<Active> batch;
    batch.swap(running_);
    stepping_ = static_cast<int64_t>(batch.size());
    lock.unlock();
    std::vector<Active> still_running;
    uint64_t generated = 0;
    for (Active& a : batch) {
      TokenEvent e = next_event(a);
      if (e.token >= 0) ++generated;
      bool wants_more = a.sink(e);
      if (!wants_more) {
        ++cancelled_;
      } else if (!e.last) {
        still_running.push_back(std::move(a));
      }
    }
    std::this_thread::sleep_for(options_.step_interval);
    lock.lock();
    totals_.generated_tokens += generated;
    ++totals_.decode_steps;
    stepping_ = 0;
    for (Active& a : still_running) running_.push_back(std::move(a));
    changed_.notify_all();
  }
}

}  // namespace fabkit::serve::fake
