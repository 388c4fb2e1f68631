#include "fabric/agent/agent.h"

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/build_info.h"
#include "fabric/agent/agent_commands.h"
#include "fabric/agent/local_interfaces.h"
#include "fabric/tcp/tcp_socket.h"
#include "fabric/wire/handshake.h"
#include "fabric/wire/handshake_gate.h"
#include "fabric/wire/messages.h"
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
  return {{"fabkit_agent", wire::kProtocolVersion},
          {"version", fabkit_version()},
          {"name", o.name},
          {"hostname", hostname()},
          {"pid", static_cast<int>(::getpid())},
          {"bind_addr", o.bind_addr.empty() ? Json() : Json(o.bind_addr)},
          {"port", port},
          {"addresses", addrs},
          {"shipped", o.shipped}};
}

void send_error(int fd, WireErrorKind kind, const std::string& msg) {
  wire::send_error_frame(fd, wire::to_string(kind), msg);
}

// While a request runs, a heartbeat frame goes to the controller every wire::kHeartbeatIntervalMs,
// so the controller can tell a busy agent from a stopped one (SIGSTOP, a hung host) within its
// liveness bound instead of the request's own (up to --transport-timeout-ms). Frames on the
// control connection are written under one lock: heartbeats, progress notes and the response
// never interleave.
class ControlWriter {
 public:
  ControlWriter(int fd, int timeout_ms)
      : fd_(fd), timeout_ms_(timeout_ms), beat_([this] { beat(); }) {}
  ~ControlWriter() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    beat_.join();
  }
  // Throws WireError when the write fails.
  void write(const wire::Frame& f) {
    std::lock_guard<std::mutex> lock(mu_);
    wire::write_frame(fd_, f, wire::deadline_in_ms(timeout_ms_));
  }
  void busy(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    busy_ = true;
    id_ = id;
  }
  void idle() {
    std::lock_guard<std::mutex> lock(mu_);
    busy_ = false;
  }

 private:
  void beat() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!done_) {
      cv_.wait_for(lock, std::chrono::milliseconds(wire::kHeartbeatIntervalMs));
      if (done_ || !busy_) continue;
      try {
        // A second at most: a controller that does not read is gone or will notice our silence.
        wire::write_frame(fd_, wire::make_frame(wire::Heartbeat{id_}), wire::deadline_in_ms(1000));
      } catch (const WireError&) {
      }
    }
  }
  int fd_, timeout_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool busy_ = false, done_ = false;
  uint64_t id_ = 0;
  std::thread beat_;
};

AgentExit serve_session(int fd, const AgentOptions& o, const std::function<void(const std::string&)>& log) {
  AgentSession session(o.token, o.idle_timeout_ms);
  session.set_runner_program(o.runner_program);
  ControlWriter out(fd, o.idle_timeout_ms);
  // Progress notes go out on the control connection while a request runs. A failed write is left
  // to the response's write to notice: the controller is gone either way.
  session.set_progress_writer([&out](const wire::Frame& note) {
    try {
      out.write(note);
    } catch (const WireError&) {
    }
  });
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
      out.busy(req.id);
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
      out.idle();
    } catch (const WireError& e) {  // not a request at all: the controller is broken
      send_error(fd, e.kind(), e.what());
      log(std::string("protocol error from controller: ") + e.what());
      return AgentExit::kProtocolError;
    }
    try {
      out.write(wire::make_frame(resp));
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
  // A deep backlog: the gate accepts promptly, but a burst of connections must not fill the
  // kernel's queue and drop the controller's SYN meanwhile.
  wire::Fd listener = tcp::listen_tcp(o.bind_addr, o.port, 4096);
  on_listening(hello_document(o, tcp::local_port(listener.get())));
  std::optional<wire::Admitted> admitted;
  {
    // Every connection handshakes at once, each with its own deadline (wire/handshake_gate.h);
    // the first that proves the token for "control" wins.
    wire::HandshakeGate gate(
        listener.get(), {o.token, "agent", [](const std::string& p) { return p == "control"; }, {}},
        {o.max_pending_handshakes, o.handshake_timeout_ms}, log);
    admitted = gate.next(wire::deadline_in_ms(o.accept_timeout_ms));
    gate.stop();       // the other handshakes end here
    listener.reset();  // exactly one controller per session
  }
  if (!admitted) {
    log(to_string(AgentExit::kNoController));
    return AgentExit::kNoController;
  }
  wire::Fd conn = std::move(admitted->fd);
  try {
    Json info = {{"name", o.name}, {"hostname", hostname()}, {"version", fabkit_version()}};
    wire::write_frame(conn.get(), wire::welcome_frame(admitted->claims, info),
                      wire::deadline_in_ms(o.handshake_timeout_ms));
  } catch (const WireError& e) {
    log(std::string("agent exiting: ") + to_string(AgentExit::kControllerDropped) + " (" + e.what() + ")");
    return AgentExit::kControllerDropped;
  }
  AgentExit e = serve_session(conn.get(), o, log);
  log(std::string("agent exiting: ") + to_string(e));
  return e;
}

}  // namespace fabkit::agent
