#include "fabric/agent/agent.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "common/build_info.h"
#include "fabric/agent/agent_commands.h"
#include "fabric/agent/local_interfaces.h"
#include "fabric/tcp/tcp_socket.h"
#include "fabric/wire/handshake.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::agent {
namespace {

using wire::WireError;
using wire::WireErrorKind;

std::string hostname() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("unknown");
}

Json hello_document(const AgentOptions& o, uint16_t port) {
  Json addrs = Json::array();
  for (const auto& i : local_interfaces(SystemRoots::live_system("")))
    if (i.value("kind", "") != "loopback" && i.value("up", false))
      for (const auto& a : i["addresses"]) addrs.push_back(a["address"]);
  return {{"fabkit_agent", wire::kProtocolVersion}, {"version", fabkit_version()},
          {"name", o.name}, {"hostname", hostname()}, {"pid", static_cast<int>(::getpid())},
          {"bind_addr", o.bind_addr.empty() ? Json() : Json(o.bind_addr)}, {"port", port},
          {"addresses", addrs}};
}

void send_error(int fd, WireErrorKind kind, const std::string& msg) {
  wire::send_error_frame(fd, wire::to_string(kind), msg);
}

// The accept side of the session: every connection gets its own handshake thread with an
// absolute deadline, so a slow or silent client costs one slot, not everyone's time; the first
// that proves the token for "control" wins and the rest are cut off.
class Gate {
 public:
  Gate(const AgentOptions& o, const std::function<void(const std::string&)>& log) : o_(o), log_(log) {
    wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!wake_.valid()) throw WireError(WireErrorKind::kIo, std::string("eventfd: ") + std::strerror(errno));
  }
  ~Gate() { close_all(); }

  // Accepts until a controller authenticates or deadline passes; returns an invalid fd then.
  wire::Fd run(int listen_fd, wire::Deadline deadline) {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (winner_.valid()) return std::move(winner_);
      }
      int left = wire::ms_left(deadline);
      if (left <= 0) return wire::Fd();
      pollfd p[2] = {{listen_fd, POLLIN, 0}, {wake_.get(), POLLIN, 0}};
      if (wire::poll_until(p, 2, deadline, "controller connections") == 0) continue;  // re-checked above
      if (!(p[0].revents & POLLIN)) continue;
      int c = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;  // ECONNABORTED and friends: the next connection may be fine
      std::lock_guard<std::mutex> lock(mu_);
      if (static_cast<int>(pending_.size()) >= o_.max_pending_handshakes) {
        ::close(c);
        log_("rejected a connection: " + std::to_string(pending_.size()) +
             " handshakes already pending (the cap)");
        continue;
      }
      pending_.insert(c);
      threads_.emplace_back([this, c] { handshake(wire::Fd(c)); });
    }
  }

  // Wakes every pending handshake (shutdown makes their reads fail at once) and joins them.
  void close_all() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
      for (int fd : pending_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    threads_.clear();
  }

 private:
  void handshake(wire::Fd conn) {
    bool ok = false;
    try {
      wire::server_handshake(conn.get(), o_.token, "agent", [](const std::string& p) { return p == "control"; },
                             wire::deadline_in_ms(o_.handshake_timeout_ms));
      ok = true;
    } catch (const WireError& e) {
      log_(std::string("rejected a connection: ") + e.what());
    }
    std::lock_guard<std::mutex> lock(mu_);
    pending_.erase(conn.get());
    if (ok && !closing_ && !winner_.valid()) {
      winner_ = std::move(conn);
      uint64_t one = 1;
      (void)!::write(wake_.get(), &one, sizeof one);
    }
  }

  const AgentOptions& o_;
  const std::function<void(const std::string&)>& log_;
  wire::Fd wake_;
  std::mutex mu_;
  std::set<int> pending_;
  bool closing_ = false;
  wire::Fd winner_;
  std::vector<std::thread> threads_;
};

AgentExit serve_session(int fd, const AgentOptions& o, const std::function<void(const std::string&)>& log) {
  AgentSession session(o.token, o.idle_timeout_ms);
  for (;;) {
    wire::Frame f;
    try {
      f = wire::read_frame(fd, wire::deadline_in_ms(o.idle_timeout_ms));
    } catch (const WireError& e) {
      if (e.kind() == WireErrorKind::kTimeout) return AgentExit::kIdleTimeout;
      if (e.kind() == WireErrorKind::kClosed || e.kind() == WireErrorKind::kTruncated ||
          e.kind() == WireErrorKind::kIo)
        return AgentExit::kControllerDropped;
      send_error(fd, e.kind(), e.what());
      log(std::string("protocol error from controller: ") + e.what());
      return AgentExit::kProtocolError;
    }
    if (f.type == wire::FrameType::kBye) return AgentExit::kBye;
    wire::Response resp;
    try {
      wire::Request req = wire::parse_request(f);
      resp.id = req.id;
      try {
        resp.result = session.handle(req);
      } catch (const WireError& e) {
        resp.ok = false;
        resp.error_code = wire::to_string(e.kind());
        resp.error_message = e.what();
      } catch (const AgentOpError& e) {
        resp.ok = false;
        resp.error_code = e.code();
        resp.error_message = e.what();
      } catch (const std::exception& e) {  // a probe or runner threw: report it, keep serving
        resp.ok = false;
        resp.error_code = "agent.internal";
        resp.error_message = e.what();
      }
    } catch (const WireError& e) {  // not a request at all: the controller is broken
      send_error(fd, e.kind(), e.what());
      log(std::string("protocol error from controller: ") + e.what());
      return AgentExit::kProtocolError;
    }
    try {
      wire::write_frame(fd, wire::make_frame(resp), wire::deadline_in_ms(o.idle_timeout_ms));
    } catch (const WireError&) {
      return AgentExit::kControllerDropped;
    }
  }
}

}  // namespace

const char* to_string(AgentExit e) {
  switch (e) {
    case AgentExit::kBye: return "session ended (bye)";
    case AgentExit::kControllerDropped: return "controller connection dropped";
    case AgentExit::kIdleTimeout: return "idle timeout";
    case AgentExit::kNoController: return "no controller connected with the session token in time";
    case AgentExit::kProtocolError: return "protocol error";
  }
  return "unknown";
}

AgentExit run_agent(const AgentOptions& o, const std::function<void(const Json&)>& on_listening,
                    const std::function<void(const std::string&)>& log) {
  wire::Fd listener = tcp::listen_tcp(o.bind_addr, o.port, 64);
  on_listening(hello_document(o, tcp::local_port(listener.get())));
  wire::Fd conn;
  {
    Gate gate(o, log);
    conn = gate.run(listener.get(), wire::deadline_in_ms(o.accept_timeout_ms));
    listener.reset();  // exactly one controller per session
  }  // the other handshakes end here
  if (!conn.valid()) {
    log(to_string(AgentExit::kNoController));
    return AgentExit::kNoController;
  }
  try {
    Json info = {{"name", o.name}, {"hostname", hostname()}, {"version", fabkit_version()}};
    wire::write_frame(conn.get(), wire::welcome_frame(info), wire::deadline_in_ms(o.handshake_timeout_ms));
  } catch (const WireError& e) {
    log(std::string("agent exiting: ") + to_string(AgentExit::kControllerDropped) + " (" + e.what() + ")");
    return AgentExit::kControllerDropped;
  }
  AgentExit e = serve_session(conn.get(), o, log);
  log(std::string("agent exiting: ") + to_string(e));
  return e;
}

}  // namespace fabkit::agent
