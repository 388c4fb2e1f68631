#include "fabric/launch/child_process.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/spawn.h"
#include "common/terminal_line.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::launch {
namespace {

using wire::WireError;
using wire::WireErrorKind;

// Process groups of live children, read by the signal handler: a fixed array of atomics, since
// a handler may touch nothing else. `fabcheck cluster` runs up to --max-parallel pairs at once
// (two agents each) beside its node checks, so the array is sized for a large allocation's round.
constexpr int kMaxChildren = 1024;
std::atomic<pid_t> g_children[kMaxChildren];

void register_child(pid_t pgid) {
  for (auto& slot : g_children) {
    pid_t expected = 0;
    if (slot.compare_exchange_strong(expected, pgid)) return;
  }
}

void unregister_child(pid_t pgid) {
  for (auto& slot : g_children) {
    pid_t expected = pgid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

void on_stop_signal(int sig) {
  erase_drawn_line_from_signal_handler();  // no progress bar left in front of the prompt
  for (auto& slot : g_children) {
    pid_t p = slot.load();
    if (p > 0) ::kill(-p, SIGTERM);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// Our ends are non-blocking: every wait is a poll with the time left to a deadline.
struct Pipe {
  wire::Fd read, write;
};

Pipe make_pipe(const std::string& program, const char* which) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw SysErrorException(SysError{"pipe2", errno, program + " " + which});
  return {wire::Fd(p[0]), wire::Fd(p[1])};
}

void set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// How often wait_exit and stop look for the exit: no descriptor reports a child's death on the
// kernels clusters run (pidfd_open needs 5.3), so waitpid(WNOHANG) between short polls.
constexpr int kExitPollMs = 10;

}  // namespace

void install_stop_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a dead agent's pipe must be an EPIPE, not the controller's death
}

ChildProcess::ChildProcess(const ChildOptions& options) : options_(options) {
  if (options_.argv.empty()) throw std::invalid_argument("ChildProcess: empty argv");
  const std::string& program = options_.argv[0];
  Pipe in = make_pipe(program, "stdin");
  Pipe out = make_pipe(program, "stdout");
  Pipe ctl;
  if (options_.control_fd) ctl = make_pipe(program, "fd 3");
  wire::Fd err;
  if (!options_.stderr_into_stdout) {
    char tmpl[] = "/tmp/fabkit-child-stderr-XXXXXX";
    err = wire::Fd(::mkostemp(tmpl, O_CLOEXEC));
    if (!err.valid()) throw SysErrorException(SysError{"mkostemp", errno, tmpl});
    ::unlink(tmpl);  // only our descriptors keep it alive
  }

  SpawnOptions so;
  so.fds = {{in.read.get(), 0}, {out.write.get(), 1}, {options_.stderr_into_stdout ? out.write.get() : err.get(), 2}};
  if (options_.control_fd) so.fds.emplace_back(ctl.write.get(), 3);
  so.search_path = options_.search_path;
  so.program = options_.program;
  so.own_process_group = options_.own_process_group;
  if (options_.env) so.env = &*options_.env;
  if (int rc = spawn_process(options_.argv, so, &pid_); rc != 0)
    throw SysErrorException(SysError{options_.search_path ? "posix_spawnp" : "posix_spawn", rc, program});
  if (options_.own_process_group) register_child(pid_);
  // The child's ends close now, before anything is written: EOF on a pipe means the child (and
  // whatever inherited it) is done, and a child that exits without reading its stdin (a --ship
  // receiver that refuses) turns the payload's write into EPIPE at once, not a wait for room
  // until the payload's deadline.
  in.read.reset();
  out.write.reset();
  ctl.write.reset();
  stdin_ = std::move(in.write);
  stdout_ = std::move(out.read);
  control_ = std::move(ctl.read);
  stderr_file_ = std::move(err);
  for (int fd : {stdin_.get(), stdout_.get(), control_.get()})
    if (fd >= 0) set_nonblocking(fd);

  if (options_.stdin_payload && !options_.stdin_payload->empty()) {
    try {
      write_stdin(*options_.stdin_payload, wire::deadline_in_ms(options_.stdin_payload_timeout_ms));
    } catch (const WireError& e) {
      if (e.kind() == WireErrorKind::kTimeout) {
        stop(0);
        throw;
      }
      stdin_.reset();  // it stopped reading: its output and exit tell why
    }
  }
  if (!options_.stdin_text.empty() && stdin_.valid()) {
    // The token goes through the pipe, never argv. Into an empty pipe a write under PIPE_BUF is
    // whole or EPIPE; a launcher that already exited is reported by the caller's next step with
    // its exit status and stderr, so the error is not ours to raise here.
    try {
      write_stdin(options_.stdin_text, wire::deadline_in_ms(1000));
    } catch (const WireError&) {
    }
  }
  if (!options_.keep_stdin_open) stdin_.reset();
}

ChildProcess::~ChildProcess() { stop(options_.stop_grace_ms); }

void ChildProcess::write_stdin(const std::string& text, wire::Deadline deadline) {
  if (!stdin_.valid()) throw WireError(WireErrorKind::kClosed, "the child's stdin is closed");
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = write_without_sigpipe(stdin_.get(), text.data() + off, text.size() - off);
    if (n > 0) {
      off += static_cast<size_t>(n);
    } else if (n < 0 && errno == EPIPE) {
      throw WireError(WireErrorKind::kClosed, "the child closed its stdin");
    } else if (n < 0 && errno == EAGAIN) {
      wire::wait_fd(stdin_.get(), POLLOUT, deadline, "room in the child's stdin");
    } else if (n < 0 && errno != EINTR) {
      throw WireError(WireErrorKind::kIo, std::string("write to the child's stdin: ") + std::strerror(errno));
    }
  }
}

void ChildProcess::drain_log() {
  if (!options_.stdout_is_log || !stdout_.valid()) return;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(stdout_.get(), buf, sizeof buf);
    if (n == 0) {
      stdout_.reset();  // EOF: nothing more will come, and polling it would spin on POLLHUP
      return;
    }
    if (n < 0) return;  // EAGAIN: drained for now
    size_t room = options_.max_log_bytes > log_.size() ? options_.max_log_bytes - log_.size() : 0;
    log_.append(buf, std::min(room, static_cast<size_t>(n)));
    if (static_cast<size_t>(n) > room) log_truncated_ = true;
  }
}

std::string ChildProcess::read_line(Stream stream, wire::Deadline deadline, size_t max_bytes) {
  const bool control = stream == Stream::kControl;
  if (control ? !options_.control_fd : options_.stdout_is_log)
    throw std::logic_error(control ? "read_line(kControl) without control_fd" : "read_line(kStdout) on a log");
  std::string& pending = control ? control_pending_ : stdout_pending_;
  wire::Fd& fd = control ? control_ : stdout_;
  const char* what = control ? "the child's fd 3" : "the child's stdout";
  for (;;) {
    auto nl = pending.find('\n');
    if (nl != std::string::npos) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      return line;
    }
    if (pending.size() > max_bytes)
      throw WireError(WireErrorKind::kOversized, std::string(what) + ": a line longer than " + std::to_string(max_bytes) + " bytes");
    if (!fd.valid()) throw WireError(WireErrorKind::kClosed, std::string(what) + " closed");
    // The log is drained while we wait, so a chatty child never blocks on a full pipe.
    pollfd p[2] = {{fd.get(), POLLIN, 0}, {control && options_.stdout_is_log && stdout_.valid() ? stdout_.get() : -1, POLLIN, 0}};
    if (wire::poll_until(p, 2, deadline, what) == 0)
      throw WireError(WireErrorKind::kTimeout, std::string("deadline passed waiting for a line on ") + what);
    drain_log();
    char buf[4096];
    ssize_t r = ::read(fd.get(), buf, sizeof buf);
    if (r == 0) {
      fd.reset();
      throw WireError(WireErrorKind::kClosed, std::string(what) + " closed");
    }
    if (r < 0 && errno != EINTR && errno != EAGAIN)
      throw WireError(WireErrorKind::kIo, std::string("read ") + what + ": " + std::strerror(errno));
    if (r > 0) pending.append(buf, static_cast<size_t>(r));
  }
}

void ChildProcess::mark_reaped() {
  reaped_ = true;
  if (options_.own_process_group) unregister_child(pid_);
}

bool ChildProcess::exited() {
  if (reaped_ || pid_ <= 0) return true;
  if (::waitpid(pid_, &status_, WNOHANG) == pid_) mark_reaped();
  return reaped_;
}

std::string ChildProcess::wait_exit(wire::Deadline deadline) {
  for (;;) {
    drain_log();
    if (exited()) break;
    if (wire::Clock::now() >= deadline) {
      stop(options_.stop_grace_ms);
      break;
    }
    // The log's bytes, or the next look at the exit.
    pollfd p{options_.stdout_is_log && stdout_.valid() ? stdout_.get() : -1, POLLIN, 0};
    wire::poll_until(&p, 1, std::min(deadline, wire::deadline_in_ms(kExitPollMs)), "the child's log");
  }
  drain_log();
  return describe_exit();
}

std::string ChildProcess::describe_exit() const {
  if (!reaped_) return "still running";
  if (WIFEXITED(status_)) return "exit status " + std::to_string(WEXITSTATUS(status_));
  if (WIFSIGNALED(status_)) return "killed by signal " + std::to_string(WTERMSIG(status_));
  return "ended";
}

std::string ChildProcess::stderr_tail(size_t max_bytes) const {
  if (!stderr_file_.valid()) return {};
  off_t size = ::lseek(stderr_file_.get(), 0, SEEK_END);
  if (size <= 0) return {};
  off_t from = size > static_cast<off_t>(max_bytes) ? size - static_cast<off_t>(max_bytes) : 0;
  std::string s(static_cast<size_t>(size - from), '\0');
  ssize_t r = ::pread(stderr_file_.get(), s.data(), s.size(), from);
  s.resize(r > 0 ? static_cast<size_t>(r) : 0);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

void ChildProcess::signal_child(int sig) const { ::kill(options_.own_process_group ? -pid_ : pid_, sig); }

void ChildProcess::stop(int grace_ms) {
  if (pid_ <= 0 || exited()) return;
  if (grace_ms > 0) {
    signal_child(SIGTERM);
    auto deadline = wire::deadline_in_ms(grace_ms);
    while (!exited() && wire::ms_left(deadline) > 0) ::usleep(kExitPollMs * 1000);
    if (reaped_) return;
  }
  signal_child(SIGKILL);
  ::waitpid(pid_, &status_, 0);
  mark_reaped();
}

}  // namespace fabkit::launch
