#include "trainer/control/control_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <vector>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "fabric/wire/wire_error.h"
#include "trainer/control/protocol.h"
#include "trainer/control/unix_socket.h"

namespace fabkit::trainer::control {
namespace fs = std::filesystem;
using wire::Clock;
using wire::Deadline;

namespace {

double unix_now_s() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count() / 1e6;
}

Json number_or_null(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

// A client between accept and reply.
struct Connection {
  UniqueFd fd;
  std::string in;
  Deadline deadline;
};

// Best effort within the connection's deadline: a client that stops reading is its own problem.
void send_reply(int fd, const std::string& reply, Deadline deadline) {
  try {
    wire::write_all(fd, reply.data(), reply.size(), deadline, "control reply");
  } catch (const wire::WireError&) {
  }
}

bool peer_is_us(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
  return cred.uid == ::geteuid() || cred.uid == 0;
}

}  // namespace

ControlServer::ControlServer(const ControlServerOptions& options) : options_(options) {
  check_job_id(options_.job);
  FABKIT_ENFORCE(options_.io_timeout_ms > 0 && options_.max_connections > 0,
                 "bad ControlServerOptions");
  dir_ = open_control_dir(options_.control_dir, /*create=*/true);
  socket_path_ = dir_.path / (options_.job + ".sock");
  registration_path_ = dir_.path / (options_.job + ".json");
  sockaddr_un addr = unix_address(socket_path_);

  struct stat st {};
  const std::string socket_name = options_.job + ".sock";
  if (::fstatat(dir_.fd.get(), socket_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (probe_socket(socket_path_) == Liveness::kAlive)
      throw UsageError("a job named '" + options_.job +
                       "' is already running on this node (socket " + socket_path_.string() +
                       "): give this run another job name, or stop that one with "
                       "`fabtrain control stop " +
                       options_.job + "`");
    // A socket whose listener is on another host refuses connections here too: in a control
    // directory shared between nodes, "refused" does not mean "dead".
    for (const Registration& r : read_registrations(dir_))
      if (r.job == options_.job && r.host != this_host())
        throw UsageError("job id '" + options_.job + "' is registered in " + dir_.path.string() +
                         " by host " + r.host +
                         ": that directory is shared between nodes; set "
                         "FABTRAIN_CONTROL_DIR to a node-local directory");
    std::string why;
    if (!remove_socket_at(dir_, socket_name, &why))  // a dead job's leftover
      throw UsageError("cannot replace " + socket_path_.string() + ": " + why +
                       "; remove it, or give this run another job name");
  }

  listen_fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!listen_fd_) throw SysErrorException({"socket", errno, socket_path_.string()});
  if (::bind(listen_fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throw SysErrorException({"bind", errno, socket_path_.string()});
  // bind creates the file with the umask's bits; nobody else can reach it meanwhile because the
  // directory is 0700 (open_control_dir), so chmod after bind leaves no window.
  auto unbind = [&] {
    std::string ignored_why;
    remove_socket_at(dir_, socket_name, &ignored_why);
  };
  if (::fchmodat(dir_.fd.get(), socket_name.c_str(), 0600, 0) != 0) {
    int e = errno;
    unbind();
    throw SysErrorException({"chmod", e, socket_path_.string()});
  }
  if (::listen(listen_fd_.get(), options_.max_connections) != 0) {
    int e = errno;
    unbind();
    throw SysErrorException({"listen", e, socket_path_.string()});
  }
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
    int e = errno;
    unbind();
    throw SysErrorException({"pipe2", e, "control server wake-up pipe"});
  }
  wake_read_.reset(p[0]);
  wake_write_.reset(p[1]);

  Registration r;
  r.job = options_.job;
  r.pid = static_cast<long>(::getpid());
  r.host = this_host();
  r.socket = socket_path_;
  r.output_dir = options_.output_dir.empty() ? fs::path() : fs::absolute(options_.output_dir);
  r.started_unix_s = unix_now_s();
  try {
    write_file_atomically(registration_path_, to_json(r).dump(2) + "\n", 0600);
  } catch (...) {
    unbind();
    throw;
  }
  thread_ = std::thread([this] { serve(); });
}

ControlServer::~ControlServer() {
  const char byte = 1;
  ssize_t ignored = ::write(wake_write_.get(), &byte, 1);
  (void)ignored;
  if (thread_.joinable()) thread_.join();
  std::string ignored_why;
  remove_socket_at(dir_, options_.job + ".sock", &ignored_why);
  remove_file_at(dir_, options_.job + ".json", &ignored_why);
}

Action ControlServer::poll() { return static_cast<Action>(pending_.exchange(0)); }

void ControlServer::publish_status(const JobStatus& s) {
  std::lock_guard<std::mutex> lock(mutex_);
  status_ = s;
  status_time_s_ = unix_now_s();
  eta_.observe(s.step, status_time_s_);
}

std::string ControlServer::status_reply() {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::optional<double> eta = eta_.seconds_left(status_.total_steps);
  Json st{{"step", status_.step},
          {"total_steps", status_.total_steps},
          {"loss", number_or_null(status_.loss)},
          {"tokens_per_s", number_or_null(status_.tokens_per_s)},
          {"eta_s", eta ? Json(*eta) : Json(nullptr)},
          {"eta", reports::term::format_duration(eta)},
          {"phase", status_.phase},
          {"pending", to_string(static_cast<Action>(pending_.load()))},
          {"updated_unix_s", status_time_s_ > 0 ? Json(status_time_s_) : Json(nullptr)},
          {"pid", static_cast<long>(::getpid())},
          {"host", this_host()},
          {"output_dir", options_.output_dir.string()}};
  return ok_reply(options_.job, "status", Json{{"status", st}});
}

std::string ControlServer::handle(const std::string& line) {
  // Nothing may escape: an exception leaving the server thread would std::terminate the run.
  try {
    return handle_checked(line);
  } catch (const ProtocolError& e) {
    return error_reply(e.code(), e.what());
  } catch (const std::exception& e) {
    return error_reply(errc::kInternal, std::string("the job failed to answer: ") + e.what());
  }
}

std::string ControlServer::handle_checked(const std::string& line) {
  const std::string command = parse_request(line);
  if (command == "status") return status_reply();
  const Action a = *action_from_string(command);
  int cur = pending_.load();
  while (cur < static_cast<int>(a) && !pending_.compare_exchange_weak(cur, static_cast<int>(a))) {
  }
  const Action now = static_cast<Action>(pending_.load());
  const char* what =
      a == Action::kSave   ? "the job writes a checkpoint after its current step and continues"
      : a == Action::kStop ? "the job writes a checkpoint after its current step and exits"
                           : "the job exits after its current step without saving";
  return ok_reply(options_.job, command, Json{{"pending", to_string(now)}, {"note", what}});
}

void ControlServer::serve() {
  std::vector<Connection> conns;
  for (;;) {
    std::vector<pollfd> fds;
    fds.push_back({wake_read_.get(), POLLIN, 0});
    fds.push_back({listen_fd_.get(), POLLIN, 0});
    Deadline next = wire::kNoDeadline;
    for (const Connection& c : conns) {
      fds.push_back({c.fd.get(), POLLIN, 0});
      next = std::min(next, c.deadline);
    }
    try {
      wire::poll_until(fds.data(), fds.size(), next, "control socket");
    } catch (const wire::WireError&) {
      continue;  // poll itself failed (ENOMEM): try again
    }
    if (fds[0].revents != 0) return;

    // Clients first, while fds still lines up with conns.
    const Clock::time_point now = Clock::now();
    for (size_t i = 0; i < conns.size(); ++i) {
      Connection& c = conns[i];
      bool done = false;
      if (fds[2 + i].revents != 0) {
        char buf[1024];
        ssize_t n = -1;
        errno = EAGAIN;
        while (c.in.size() <= kMaxLineBytes &&
               (n = ::recv(c.fd.get(), buf, sizeof buf, MSG_DONTWAIT)) > 0)
          c.in.append(buf, static_cast<size_t>(n));
        const bool failed = n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
        const size_t nl = c.in.find('\n');
        if (nl != std::string::npos) {
          send_reply(c.fd.get(), handle(c.in.substr(0, nl)), c.deadline);
          done = true;
        } else if (c.in.size() > kMaxLineBytes) {
          send_reply(c.fd.get(),
                     error_reply(errc::kLineTooLong, "request longer than " +
                                                         std::to_string(kMaxLineBytes) +
                                                         " bytes without a newline"),
                     c.deadline);
          done = true;
        } else if (failed) {
          done = true;  // reset by the client: nobody to answer
        } else if (n == 0) {
          // The client closed its side: a request without the final newline is still a request.
          if (!c.in.empty()) send_reply(c.fd.get(), handle(c.in), c.deadline);
          done = true;
        }
      }
      if (!done && now >= c.deadline) {
        send_reply(c.fd.get(),
                   error_reply(errc::kTimeout, "no complete request line within " +
                                                   std::to_string(options_.io_timeout_ms) + " ms"),
                   now + std::chrono::milliseconds(10));
        done = true;
      }
      if (done) c.fd.reset();
    }
    conns.erase(
        std::remove_if(conns.begin(), conns.end(), [](const Connection& c) { return !c.fd; }),
        conns.end());

    if (fds[1].revents != 0) {
      for (;;) {
        int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break;  // EAGAIN: no more waiting; other errors: the client is gone
        Connection c{
            UniqueFd(fd), {}, Clock::now() + std::chrono::milliseconds(options_.io_timeout_ms)};
        if (!peer_is_us(fd)) {
          send_reply(fd, error_reply(errc::kForbidden, "only the job's own user may control it"),
                     c.deadline);
        } else if (static_cast<int>(conns.size()) >= options_.max_connections) {
          send_reply(fd,
                     error_reply(errc::kBusy, std::to_string(options_.max_connections) +
                                                  " control connections are open: try again"),
                     c.deadline);
        } else {
          conns.push_back(std::move(c));
        }
      }
    }
  }
}

}  // namespace fabkit::trainer::control
