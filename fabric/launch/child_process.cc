#include "fabric/launch/child_process.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/spawn.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::launch {
namespace {

// Process groups of live children, read by the signal handler: a fixed array of atomics, since
// a handler may touch nothing else.
constexpr int kMaxChildren = 16;
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
  for (auto& slot : g_children) {
    pid_t p = slot.load();
    if (p > 0) ::kill(-p, SIGTERM);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void install_stop_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a dead agent's pipe must be an EPIPE, not the controller's death
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& stdin_text) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) throw SysErrorException(SysError{"pipe2", errno, "agent stdin"});
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    throw SysErrorException(SysError{"pipe2", errno, "agent stdout"});
  }
  wire::Fd in_r(in[0]), in_w(in[1]), out_r(out[0]), out_w(out[1]);
  char tmpl[] = "/tmp/fabcheck-agent-stderr-XXXXXX";
  wire::Fd err(::mkostemp(tmpl, O_CLOEXEC));
  if (!err.valid()) throw SysErrorException(SysError{"mkostemp", errno, tmpl});
  ::unlink(tmpl);  // only our descriptors keep it alive

  SpawnOptions so;
  so.fds = {{in_r.get(), 0}, {out_w.get(), 1}, {err.get(), 2}};
  so.search_path = true;
  so.own_process_group = true;
  if (int rc = spawn_process(argv, so, &pid_); rc != 0) throw SysErrorException(SysError{"posix_spawnp", rc, argv.at(0)});
  register_child(pid_);
  stdout_ = std::move(out_r);
  stderr_file_ = std::move(err);
  in_r.reset();
  out_w.reset();
  // The token goes through the pipe, never argv; a launcher that exits early gives EPIPE, which
  // the hello step then reports with the launcher's stderr.
  std::string text = stdin_text + "\n";
  write_without_sigpipe(in_w.get(), text.data(), text.size());  // < PIPE_BUF: no partial write
}

ChildProcess::~ChildProcess() { stop(); }

std::string ChildProcess::read_line(wire::Deadline deadline, size_t max_bytes) {
  for (;;) {
    auto nl = pending_.find('\n');
    if (nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    if (pending_.size() > max_bytes)
      throw wire::WireError(wire::WireErrorKind::kOversized, "agent stdout line longer than " +
                                                                 std::to_string(max_bytes));
    wire::wait_fd(stdout_.get(), POLLIN, deadline, "agent stdout");
    char buf[4096];
    ssize_t r = ::read(stdout_.get(), buf, sizeof buf);
    if (r == 0) throw wire::WireError(wire::WireErrorKind::kClosed, "agent stdout closed");
    if (r < 0 && errno != EINTR && errno != EAGAIN)
      throw wire::WireError(wire::WireErrorKind::kIo, std::string("read agent stdout: ") + std::strerror(errno));
    if (r > 0) pending_.append(buf, static_cast<size_t>(r));
  }
}

bool ChildProcess::exited() {
  if (reaped_) return true;
  if (pid_ <= 0) return true;
  pid_t r = ::waitpid(pid_, &status_, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    unregister_child(pid_);
  }
  return reaped_;
}

std::string ChildProcess::describe_exit() const {
  if (!reaped_) return "still running";
  if (WIFEXITED(status_)) return "exit status " + std::to_string(WEXITSTATUS(status_));
  if (WIFSIGNALED(status_)) return "killed by signal " + std::to_string(WTERMSIG(status_));
  return "ended";
}

std::string ChildProcess::stderr_tail(size_t max_bytes) const {
  off_t size = ::lseek(stderr_file_.get(), 0, SEEK_END);
  if (size <= 0) return {};
  off_t from = size > static_cast<off_t>(max_bytes) ? size - static_cast<off_t>(max_bytes) : 0;
  std::string s(static_cast<size_t>(size - from), '\0');
  ssize_t r = ::pread(stderr_file_.get(), s.data(), s.size(), from);
  s.resize(r > 0 ? static_cast<size_t>(r) : 0);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

void ChildProcess::stop(int grace_ms) {
  if (pid_ <= 0 || exited()) return;
  ::kill(-pid_, SIGTERM);
  auto deadline = wire::deadline_in_ms(grace_ms);
  while (!exited() && wire::ms_left(deadline) > 0) ::usleep(10000);
  if (!exited()) {
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, &status_, 0);
    reaped_ = true;
    unregister_child(pid_);
  }
}

}  // namespace fabkit::launch
