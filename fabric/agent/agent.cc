#include "fabric/agent/agent.h"

#include <unistd.h>

#include "common/build_info.h"
#include "fabric/agent/agent_commands.h"
#include "fabric/agent/local_interfaces.h"
#include "fabric/tcp/tcp_socket.h"
#include "fabric/wire/token.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::agent {
namespace {

using wire::WireError;
using wire::WireErrorKind;

// A hello is tiny; capping it at 4 KiB keeps an unauthenticated peer from making us buffer more.
constexpr uint32_t kMaxHelloBytes = 4096;
constexpr int kHelloTimeoutMs = 5000;

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
  try {
    wire::write_frame(fd, wire::make_frame(wire::ErrorMessage{wire::to_string(kind), msg}),
                      wire::deadline_in_ms(1000));
  } catch (const WireError&) {
  }
}

// Authenticates one connection; returns true when it presented the session token.
bool authenticate(int fd, const AgentOptions& o, const std::function<void(const std::string&)>& log) {
  try {
    auto hello = wire::parse_hello(wire::read_frame(fd, wire::deadline_in_ms(kHelloTimeoutMs), kMaxHelloBytes));
    if (hello.protocol != wire::kProtocolVersion) {
      send_error(fd, WireErrorKind::kVersionMismatch,
                 "agent speaks protocol " + std::to_string(wire::kProtocolVersion) + ", client " +
                     std::to_string(hello.protocol) + "; use the same fabcheck build on both ends");
      log("rejected a connection: protocol " + std::to_string(hello.protocol));
      return false;
    }
    if (!wire::constant_time_equal(hello.token, o.token)) {
      send_error(fd, WireErrorKind::kBadToken, "session token does not match");
      log("rejected a connection: wrong session token");
      return false;
    }
    wire::Hello reply;
    reply.role = "agent";
    reply.info = {{"name", o.name}, {"hostname", hostname()}, {"version", fabkit_version()}};
    wire::write_frame(fd, wire::make_frame(reply), wire::deadline_in_ms(kHelloTimeoutMs));
    return true;
  } catch (const WireError& e) {
    send_error(fd, e.kind(), e.what());
    log(std::string("rejected a connection: ") + e.what());
    return false;
  }
}

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
  wire::Fd listener = tcp::listen_tcp(o.bind_addr, o.port, 8);
  on_listening(hello_document(o, tcp::local_port(listener.get())));
  auto deadline = wire::deadline_in_ms(o.accept_timeout_ms);
  for (;;) {
    wire::Fd conn;
    try {
      conn = tcp::accept_until(listener.get(), deadline);
    } catch (const WireError&) {
      log(to_string(AgentExit::kNoController));
      return AgentExit::kNoController;
    }
    if (!authenticate(conn.get(), o, log)) continue;  // keep waiting for the real controller
    listener.reset();  // exactly one controller per session
    AgentExit e = serve_session(conn.get(), o, log);
    log(std::string("agent exiting: ") + to_string(e));
    return e;
  }
}

}  // namespace fabkit::agent
