#include "fabric/agent/agent.h"

#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "common/build_info.h"
#include "fabric/agent/agent_commands.h"
#include "fabric/agent/local_interfaces.h"
#include "fabric/tcp/tcp_socket.h"
#include "fabric/wire/handshake.h"
#include "fabric/wire/handshake_gate.h"
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

AgentExit serve_session(int fd, const AgentOptions& o, const std::function<void(const std::string&)>& log) {
  AgentSession session(o.token, o.idle_timeout_ms);
  // Progress notes go out on the control connection while a request runs (the loop below is
  // blocked in handle() then, so writes never interleave). A failed write is left to the
  // response's write to notice: the controller is gone either way.
  session.set_progress_writer([fd, &o](const wire::Frame& note) {
    try {
      wire::write_frame(fd, note, wire::deadline_in_ms(o.idle_timeout_ms));
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
    // Every connection handshakes in its own slot with its own deadline (wire/handshake_gate.h);
    // the first that proves the token for "control" wins.
    wire::HandshakeGate gate(
        listener.get(),
        [&o](int fd, wire::Deadline d) {
          return wire::server_handshake(
              fd, o.token, "agent", [](const std::string& p) { return p == "control"; }, d);
        },
        {o.max_pending_handshakes, o.handshake_timeout_ms}, log);
    if (auto a = gate.next(wire::deadline_in_ms(o.accept_timeout_ms))) conn = std::move(a->fd);
    gate.stop();       // the other handshakes end here
    listener.reset();  // exactly one controller per session
  }
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
