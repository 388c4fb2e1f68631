// The one child-process class: started with posix_spawn (common/spawn.h: nothing is allocated
// between fork and exec), its pipes read and written with absolute deadlines (wire::Deadline), its
// exit waited for with a deadline, and stopped (SIGTERM, a grace period, SIGKILL) on destruction,
// so an error path never leaves a child behind. Protocols stay with their users: the agent
// launcher (fabric/pair: the token on stdin, the hello line on stdout, stderr kept for messages)
// and the NCCL runner (fabric/nccl_runner/runner_child.h: lines on fd 3, stdout+stderr merged into
// NCCL's log). SIGINT/SIGTERM on the controller stop every live child's group (install_stop_handler).
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fabric/wire/socket_io.h"

namespace fabkit::launch {

struct ChildOptions {
  std::vector<std::string> argv;  // argv[0] = the program
  bool search_path = false;       // argv[0] is looked up in PATH
  // The file to execute when it is not argv[0]: "/proc/self/exe" starts this same executable
  // (the agent's runner children, fabric/agent/transport_child.h); empty: argv[0].
  std::string program;
  std::optional<std::vector<std::string>> env;  // KEY=VALUE; unset: this process's environment
  // A process group of its own: stop() signals the child and everything it started, and
  // install_stop_handler's handler stops it with the controller.
  bool own_process_group = false;
  // Written to stdin first (the token; keep it under PIPE_BUF so it is one atomic write). A child
  // that has already exited makes it a silent no-op: its exit and stderr tell the story.
  std::string stdin_text;
  // Written to stdin before stdin_text, within stdin_payload_timeout_ms (fabcheck --ship: the
  // binary itself). A child that stops reading early makes it a no-op as for stdin_text; one that
  // does not read in time throws WireError kTimeout from the constructor.
  std::shared_ptr<const std::string> stdin_payload;
  int stdin_payload_timeout_ms = 60000;
  bool keep_stdin_open = false;  // else the child reads EOF after stdin_text
  // stdout collected as a log (up to max_log_bytes, the rest counted as truncated) and drained
  // during every wait, instead of read as lines; stderr either kept in an unlinked temp file
  // (stderr_tail) or merged into stdout.
  bool stdout_is_log = false;
  bool stderr_into_stdout = false;
  size_t max_log_bytes = 8u << 20;
  bool control_fd = false;  // a pipe on the child's fd 3, read as lines (Stream::kControl)
  int stop_grace_ms = 1000;  // the destructor's stop(): SIGTERM, this long, then SIGKILL
};

class ChildProcess {
 public:
  enum class Stream { kStdout, kControl };

  // Throws SysErrorException when a pipe cannot be made or posix_spawn fails (the program is
  // missing or not executable: the errno says so, the message names argv[0]).
  explicit ChildProcess(const ChildOptions& options);
  ~ChildProcess();  // stop(stop_grace_ms)
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }

  // The next line of the stream (without '\n'), draining the log meanwhile (a stream read as
  // lines is not drained while another is read: a protocol that writes both must read both). Throws wire::WireError:
  // kTimeout at the deadline, kClosed at EOF, kOversized past max_bytes without a newline, kIo.
  std::string read_line(Stream stream, wire::Deadline deadline, size_t max_bytes = 64 * 1024);
  // All of text to stdin, without SIGPIPE. Throws WireError kClosed (the child closed its stdin or
  // exited), kTimeout (it does not read), kIo.
  void write_stdin(const std::string& text, wire::Deadline deadline);

  bool exited();  // reaps when it has exited
  // Waits for the child to exit (draining the log) until the deadline, then stops it as the
  // destructor does (stop(stop_grace_ms)). Returns describe_exit().
  std::string wait_exit(wire::Deadline deadline);
  int exit_status() const { return status_; }  // waitpid status, valid after exited()
  std::string describe_exit() const;           // "exit status 255", "killed by signal 9"
  // SIGTERM (to the group when it has one), up to grace_ms to exit, then SIGKILL; reaps.
  // Idempotent.
  void stop(int grace_ms = 1000);

  // Bytes read from a line stream but not yet returned as a line: after read_line's kClosed, the
  // size of a last line the child cut off without its newline (a truncated frame).
  size_t pending_bytes(Stream stream) const {
    return stream == Stream::kControl ? control_pending_.size() : stdout_pending_.size();
  }
  const std::string& log() const { return log_; }  // stdout_is_log
  bool log_truncated() const { return log_truncated_; }
  std::string stderr_tail(size_t max_bytes = 2000) const;  // "" when stderr is merged

 private:
  void drain_log();
  void signal_child(int sig) const;
  void mark_reaped();

  ChildOptions options_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  wire::Fd stdin_, stdout_, control_, stderr_file_;
  std::string stdout_pending_, control_pending_;
  std::string log_;
  bool log_truncated_ = false;
};

// SIGINT/SIGTERM: SIGTERM every registered child's process group, then re-raise with the default
// action so the controller exits with the conventional status.
void install_stop_handler();

}  // namespace fabkit::launch
