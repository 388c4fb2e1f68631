#include "fabric/nccl_runner/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>


#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "common/spawn.h"
#include "fabric/allreduce/allreduce_types.h"

namespace fabkit::fabric {
namespace {

// NCCL at INFO writes a few KB per rank; a runaway child must not grow our memory without bound.
constexpr size_t kMaxLogBytes = 8 << 20;

void make_pipe(int fds[2]) {
  if (::pipe2(fds, O_CLOEXEC) != 0) throw PeerError("io_error", std::string("pipe2: ") + std::strerror(errno));
}

}  // namespace

ChildProcess::ChildProcess(const std::string& program, const std::vector<std::string>& args,
                           const std::vector<std::string>& envp) {
  int in[2], out[2], ctl[2];
  make_pipe(in);
  Fd in_r(in[0]), in_w(in[1]);
  make_pipe(out);
  Fd out_r(out[0]), out_w(out[1]);
  make_pipe(ctl);
  Fd ctl_r(ctl[0]), ctl_w(ctl[1]);
  std::vector<std::string> argv{program};
  argv.insert(argv.end(), args.begin(), args.end());
  SpawnOptions so;
  so.fds = {{in_r.get(), 0}, {out_w.get(), 1}, {out_w.get(), 2}, {ctl_w.get(), 3}};
  so.env = &envp;
  if (int rc = spawn_process(argv, so, &pid_); rc != 0) {
    throw PeerError("io_error", "cannot start " + program + ": " + std::strerror(rc));
  }
  stdin_ = std::move(in_w);
  log_fd_ = std::move(out_r);
  ctl_fd_ = std::move(ctl_r);
  set_nonblocking(stdin_.get());
  set_nonblocking(log_fd_.get());
  set_nonblocking(ctl_fd_.get());
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exited_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

void ChildProcess::send_line(const std::string& line, int timeout_ms) {
  std::string l = line + "\n";
  size_t off = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (off < l.size()) {
    // A child that died must not take the agent down with SIGPIPE (common/spawn.h).
    ssize_t n = write_without_sigpipe(stdin_.get(), l.data() + off, l.size() - off);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR)
      throw PeerError("child_died", "the NCCL runner child closed its stdin: " + std::string(std::strerror(errno)));
    if (std::chrono::steady_clock::now() > deadline) throw PeerError("child_timeout", "the NCCL runner child does not read its stdin");
    pollfd p{stdin_.get(), POLLOUT, 0};
    ::poll(&p, 1, 50);
  }
}

void ChildProcess::drain_log() {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(log_fd_.get(), buf, sizeof buf);
    if (n <= 0) return;
    size_t room = kMaxLogBytes > log_.size() ? kMaxLogBytes - log_.size() : 0;
    log_.append(buf, std::min(room, static_cast<size_t>(n)));
    if (static_cast<size_t>(n) > room) log_truncated_ = true;
  }
}

std::string ChildProcess::next_line(int timeout_ms, bool* eof) {
  *eof = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    size_t nl = ctl_buf_.find('\n');
    if (nl != std::string::npos) {
      std::string line = ctl_buf_.substr(0, nl);
      ctl_buf_.erase(0, nl + 1);
      return line;
    }
    if (ctl_buf_.size() > (1 << 20)) throw PeerError("child_protocol", "the NCCL runner child wrote a line over 1 MiB");
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    if (left <= 0)
      throw PeerError("child_timeout", "the NCCL runner child said nothing for " + std::to_string(timeout_ms) + " ms");
    pollfd p[2] = {{ctl_fd_.get(), POLLIN, 0}, {log_fd_.get(), POLLIN, 0}};
    ::poll(p, 2, left);
    drain_log();
    char buf[4096];
    ssize_t n = ::read(ctl_fd_.get(), buf, sizeof buf);
    if (n > 0) ctl_buf_.append(buf, static_cast<size_t>(n));
    if (n == 0) {
      *eof = true;
      return "";
    }
  }
}

std::string ChildProcess::wait_exit(int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int status = 0;
  for (;;) {
    drain_log();
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    pollfd p{log_fd_.get(), POLLIN, 0};
    ::poll(&p, 1, 20);
  }
  exited_ = true;
  drain_log();
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

}  // namespace fabkit::fabric
