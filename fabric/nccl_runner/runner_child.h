// The parent's end of the fabcheck-nccl-runner child (child_protocol.h): one launch::ChildProcess
// with the protocol lines on the child's fd 3, its stdout and stderr merged into NCCL's log, and
// our commands on its stdin. Errors in the runners' vocabulary (PeerError child_timeout /
// child_died / child_protocol / io_error). Killed at once and reaped on destruction, so an error
// path never leaves an NCCL child behind.
#pragma once

#include <string>
#include <vector>

#include "fabric/launch/child_process.h"

namespace fabkit::fabric {

class RunnerChild {
 public:
  // Throws PeerError io_error naming the program when it cannot be started.
  RunnerChild(const std::string& program, const std::vector<std::string>& args, const std::vector<std::string>& envp);

  // Writes one line to the child's stdin within timeout_ms.
  void send_line(const std::string& line, int timeout_ms);
  // Next protocol line from fd 3 while draining the log; "" with *eof=true when fd 3 closed;
  // PeerError child_timeout after timeout_ms of silence on fd 3 (the deadline is fixed when the
  // call starts: each line gets timeout_ms, so every PROGRESS line restarts it).
  std::string next_line(int timeout_ms, bool* eof);
  // Waits up to timeout_ms for exit (then SIGKILL); returns the wait status text ("exit 0",
  // "signal 9"): the run's extra.child_exit (docs/allreduce.md).
  std::string wait_exit(int timeout_ms);
  const std::string& log() const { return child_.log(); }
  bool log_truncated() const { return child_.log_truncated(); }

  // A protocol line is one JSON RESULT at most: a few KB per size.
  static constexpr size_t kMaxLineBytes = 1 << 20;

 private:
  launch::ChildProcess child_;
};

}  // namespace fabkit::fabric
