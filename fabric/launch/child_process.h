// A launched agent: spawned with posix_spawn in its own process group (so the launcher and
// everything it starts can be stopped together), the session token written to its stdin, its
// stdout read line by line with a deadline, its stderr kept in an unlinked temp file for error
// messages. SIGINT/SIGTERM on the controller stop every live child's group (install_stop_handler).
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

#include "fabric/wire/socket_io.h"

namespace fabkit::launch {

class ChildProcess {
 public:
  // Throws SysErrorException when posix_spawn itself fails (e.g. the launcher binary is missing;
  // the errno says so).
  ChildProcess(const std::vector<std::string>& argv, const std::string& stdin_text);
  ~ChildProcess();  // stop()
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Next stdout line (without '\n'); throws wire::WireError kTimeout / kClosed (EOF).
  std::string read_line(wire::Deadline deadline, size_t max_bytes = 64 * 1024);
  bool exited();          // reaps when it has exited
  int exit_status() const { return status_; }  // waitpid status, valid after exited()
  std::string describe_exit() const;           // "exit status 255", "killed by signal 9"
  std::string stderr_tail(size_t max_bytes = 2000) const;
  // SIGTERM to the group, up to grace_ms to exit, then SIGKILL. Idempotent.
  void stop(int grace_ms = 1000);

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  wire::Fd stdout_;
  wire::Fd stderr_file_;
  std::string pending_;
};

// SIGINT/SIGTERM: SIGTERM every registered child's process group, then re-raise with the default
// action so the controller exits with the conventional status.
void install_stop_handler();

}  // namespace fabkit::launch
