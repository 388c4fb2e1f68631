// What the two c10d backends of Comm (comm_gloo.cc, comm_nccl.cc) share: a request over the
// c10d Works of one collective, fabtrain's own collective timeout, and the rule that a failed
// collective ends the group. Included only by those two files and comm_c10d.cc, the trainer's
// c10d users.
//
// Why fabtrain keeps its own deadline: the backends' timeouts say only "timed out" (Gloo) or abort
// every rank with SIGABRT from ProcessGroupNCCL's watchdog, so nobody learns which rank is
// missing and fabtrain's error path never runs. Here every collective has a number; a wait that
// blocks posts that number to the rendezvous store, and a wait that passes the collective timeout
// reads every rank's post and names the ranks (and hosts) that did not arrive (comm_progress.h)
// before it throws CommError. The backends' own timeouts are set longer (backend_timeout()), so
// this deadline always comes first. Where completion can be polled (NCCL), a watcher thread
// (deadline_watcher.h) meets the same deadline while the host is blocked outside any wait: the
// dead-group handler (comm.h) is then called on that thread, and fabtrain's ends the process
// there, since the blocked host may never reach a wait that could throw.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "trainer/distributed/comm.h"
#include "trainer/distributed/comm_progress.h"
#include "trainer/distributed/deadline_watcher.h"

namespace fabkit::trainer {

using C10dWorks = std::vector<c10::intrusive_ptr<c10d::Work>>;

class StoreReporter;

// The group side: issues collectives, waits for them with fabtrain's deadline, and marks the group
// dead on the first failure, since peers may be blocked in another collective and the group
// cannot be reused.
class C10dGroup {
 public:
  virtual ~C10dGroup();

  // Starts one collective (or the sends and receives of one exchange) and returns its request;
  // finish runs after the works landed (a local sum, a copy back; it also keeps staged buffers
  // alive until then). host_wait: wait() returns only once the works completed (Gloo; NCCL with
  // host buffers); false: Work::wait() (NCCL on device buffers: the caller's stream waits).
  // With poll_completion_, the collective is also watched from its issue (its deadline then
  // counts from there, as ProcessGroupNCCL's own timeout does) until its works complete.
  CommRequestPtr issue(const char* op, size_t count, const std::function<C10dWorks()>& start,
                       std::function<void()> finish, bool host_wait = true);
  // issue(...)->wait().
  void run(const char* op, size_t count, const std::function<C10dWorks()>& start,
           std::function<void()> finish = nullptr, bool host_wait = true);
  // op: the collective as named in errors ("allgather of step 12").
  void wait_works(const std::string& op, uint64_t seq, size_t count, C10dWorks& works,
                  bool host_wait);
  bool dead() const { return dead_; }

  // The timeout the backend itself gets: longer than fabtrain's, with room to name the missing
  // ranks, so ProcessGroupNCCL's watchdog (or Gloo's own timeout) never fires first.
  static std::chrono::milliseconds backend_timeout(const CommOptions& o);

 protected:
  C10dGroup(std::string backend, const CommOptions& o);
  // Once the process group exists: the store the deadline reports through (a clone, so a store
  // host that stopped answering blocks only the reporter's thread), and this rank's host posted.
  void watch_through(const c10::intrusive_ptr<c10d::Store>& store);
  // Stops the watcher thread (and waits for an expiry in progress): first in a backend's
  // destructor, so the thread never calls into a group being torn down.
  void stop_watching() { watcher_.reset(); }
  // Every rank of the group waits here, over the store, for up to the pause timeout: for pauses
  // of one rank (rank 0 writing a checkpoint) that must trip neither deadline.
  void store_barrier(const std::string& what);
  // Whether every work has completed (or failed), asked from the watcher thread; a backend
  // whose works query a device sets that device there first.
  virtual bool works_completed(const C10dWorks& works);
  // The CommError text of a failed collective: the backend's likely causes and where to look.
  virtual std::string failure_message(const char* op, size_t count,
                                      const std::string& cause) const = 0;

  const std::string backend_;  // "Gloo", "NCCL"
  const int rank_;
  const int world_;
  const std::string host_;         // "node7 pid 4242"
  std::atomic<bool> dead_{false};  // also set by the watcher thread
  // Polls Work::isCompleted() against the deadline (NCCL) instead of Work::wait(time left)
  // (Gloo, whose send/recv works complete only inside wait()); and watches each collective from a
  // thread (NCCL's works complete without the host; Gloo's send/recv only inside wait()).
  // Set before watch_through().
  bool poll_completion_ = false;

 private:
  void check_alive(const std::string& op);
  // Marks the group dead, hands the error to the dead-group handler (comm.h), then throws it.
  [[noreturn]] void die(CommError error);
  // Marks the group dead and hands the error to the handler, unless an earlier error was handed.
  void hand_over(const CommError& error);
  [[noreturn]] void fail(const std::string& op, size_t count, const std::exception& e);
  [[noreturn]] void time_out(const std::string& op, uint64_t seq, size_t count);
  // The watcher's side of time_out: the handler ends the program; one that returns leaves the
  // error for the host's next wait to throw.
  void watched_deadline_passed(const std::string& op, uint64_t seq, size_t count);
  // The timeout's error, made once (the first collective past its deadline, whichever thread
  // sees it first); the other thread gets the same.
  CommError timeout_error(const std::string& op, uint64_t seq, size_t count);
  std::string who_is_missing(const ProgressPost& mine);

  const int timeout_ms_;
  const int pause_timeout_ms_;
  // This rank's process serves the rendezvous store (the world's rank 0 without torchrun's
  // agent): when it fails, it stays a little so the others can still read who is missing.
  const bool serves_store_;
  uint64_t next_seq_ = 1;
  uint64_t next_pause_ = 0;
  c10::intrusive_ptr<c10d::Store> store_;  // main thread only (store_barrier)
  std::shared_ptr<StoreReporter> reporter_;
  std::atomic<bool> handed_over_{false};
  std::mutex timeout_m_;
  std::optional<CommError> timeout_error_;
  // Last: stopped first on destruction, while what its expiries use still exists.
  std::unique_ptr<DeadlineWatcher> watcher_;
};

// The first line of an exception's text (c10d's carry a C++ stack trace after it).
std::string first_line(const std::string& s);

}  // namespace fabkit::trainer
