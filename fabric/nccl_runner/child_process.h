// A child process with three pipes: its stdin (our commands), its stdout+stderr merged (NCCL's
// log), and its fd 3 (protocol lines). Killed and reaped on destruction, so an error path never
// leaves an NCCL child behind.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "fabric/allreduce/session_socket.h"

namespace fabkit::fabric {

class ChildProcess {
 public:
  // Throws PeerError io_error naming the program when it cannot be started.
  ChildProcess(const std::string& program, const std::vector<std::string>& args, const std::vector<std::string>& envp);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Writes one line to the child's stdin (bounded by timeout_ms).
  void send_line(const std::string& line, int timeout_ms);
  // Next protocol line from fd 3 while draining the log; "" with *eof=true when fd 3 closed;
  // PeerError child_timeout after timeout_ms of silence on fd 3.
  std::string next_line(int timeout_ms, bool* eof);
  // Waits up to timeout_ms for exit (then SIGKILL); returns the wait status text ("exit 0", "signal 9").
  std::string wait_exit(int timeout_ms);
  const std::string& log() const { return log_; }
  bool log_truncated() const { return log_truncated_; }

 private:
  void drain_log();
  pid_t pid_ = -1;
  Fd stdin_, log_fd_, ctl_fd_;
  std::string log_, ctl_buf_;
  bool log_truncated_ = false;
  bool exited_ = false;
};

}  // namespace fabkit::fabric
