// Collectives in flight and their deadlines, watched from a thread of its own.
//
// Why a thread: fabtrain's collective deadline was met only by a host wait that polls (comm_c10d's
// wait_works). On a GPU the host often never gets there while a collective hangs: a hung
// all-gather stalls the compute stream, the launch queue fills, and the host blocks inside a
// kernel launch or a blocking copy, where no code of fabtrain runs. ProcessGroupNCCL's watchdog
// then aborts the process (SIGABRT) without naming the rank or the collective. This thread does
// not depend on where the host is: at a watched collective's deadline it runs the expiry (which
// names the missing ranks and ends the run) even while the host is blocked.
//
// Plain C++ (no c10d): what "completed" means is the caller's (Work::isCompleted for NCCL).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace fabkit::trainer {

class DeadlineWatcher {
 public:
  using Clock = std::chrono::steady_clock;
  struct Watch {
    Clock::time_point deadline;
    // Both run on the watcher's thread, never under its lock. completed() is asked at every look
    // until it says true (then the watch is dropped); expired() runs once, at the first look past
    // the deadline with completed() false, and may block (it asks the peers who is missing).
    std::function<bool()> completed;
    std::function<void()> expired;
  };

  // Looks at every watch once per `period` (how late past its deadline an expiry may run, and
  // how long a completed collective stays held).
  explicit DeadlineWatcher(std::chrono::milliseconds period);
  // Stops the thread and waits for it (for an expiry in progress too).
  ~DeadlineWatcher();
  DeadlineWatcher(const DeadlineWatcher&) = delete;
  DeadlineWatcher& operator=(const DeadlineWatcher&) = delete;

  void watch(Watch w);
  // Watches not yet completed or expired (including those being looked at now).
  size_t watched() const;

 private:
  void loop();

  const std::chrono::milliseconds period_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::vector<Watch> added_;  // watch()ed since the thread's last look
  size_t looking_ = 0;        // held by the thread during a look
  bool stop_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace fabkit::trainer
