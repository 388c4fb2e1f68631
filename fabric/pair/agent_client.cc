#include "fabric/pair/agent_client.h"

#include <unistd.h>

#include <algorithm>

#include "common/build_info.h"
#include "common/errors.h"
#include "common/json_read.h"
#include "common/wait_status.h"
#include "fabric/launch/ship.h"
#include "fabric/tcp/tcp_socket.h"
#include "fabric/wire/handshake.h"
#include "fabric/wire/messages.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::pair {
namespace {

using wire::WireError;
using wire::WireErrorKind;

std::string with_stderr(const launch::ChildProcess* c, std::string msg) {
  if (c == nullptr) return msg;
  std::string tail = c->stderr_tail(600);
  if (!tail.empty()) msg += "; agent/launcher stderr: " + tail;
  return msg;
}

constexpr int kShipPayloadMinTimeoutMs = 60000;

}  // namespace

void check_agent_version(const std::string& host, const Json& hello) {
  // The protocol number changes only with the frames, so two releases that differ in what they
  // measure or report would pass a protocol check and mix silently: the release must match too.
  const Json& protocol = hello["fabkit_agent"];
  const Json version = hello.value("version", Json());
  const std::string agent_version = version.is_string()
                                        ? version.get<std::string>().substr(0, 64)
                                        : "(none: " + version.dump().substr(0, 32) + ")";
  if (protocol == wire::kProtocolVersion && agent_version == fabkit_version()) return;
  throw StepError(host, "pair.version_mismatch",
                  "the agent on " + host + " is fabcheck " + agent_version + " (protocol " +
                      protocol.dump().substr(0, 16) + "), this controller is fabcheck " +
                      fabkit_version() + " (protocol " + std::to_string(wire::kProtocolVersion) +
                      "); install the same fabkit-fabcheck version on every node, or run with "
                      "--ship to send this controller's own binary");
}

void AgentClient::launch(const launch::RemoteCommand& command, int timeout_ms) {
  try {
    launch::ChildOptions o;
    o.argv = command.argv;
    o.stdin_payload = command.stdin_payload;  // --ship: the binary, ahead of the token
    // A few MB over a slow link to a remote site can take longer than one control step.
    o.stdin_payload_timeout_ms = std::max(timeout_ms, kShipPayloadMinTimeoutMs);
    o.search_path = true;
    o.own_process_group = true;  // the launcher and the agent it starts stop together
    o.stdin_text = token_ + "\n";  // the token goes through the pipe, never argv
    child_ = std::make_unique<launch::ChildProcess>(o);
  } catch (const SysErrorException& e) {
    throw StepError(host_, "pair.launch_failed", std::string("could not start the launcher: ") + e.what());
  } catch (const WireError& e) {
    throw StepError(host_, "pair.ship_failed",
                    "the host did not take this controller's binary within " +
                        std::to_string(std::max(timeout_ms, kShipPayloadMinTimeoutMs)) + " ms (" +
                        e.what() + ")");
  }
}

Json AgentClient::await_hello(int timeout_ms) {
  auto deadline = wire::deadline_in_ms(timeout_ms);
  try {
    // ssh may print a banner first; the hello is the first line that is a JSON object with
    // "fabkit_agent".
    for (int lines = 0; lines < 100; ++lines) {
      std::string line = child_->read_line(launch::ChildProcess::Stream::kStdout, deadline);
      Json j;
      try {
        j = parse_json(line, "agent output line");
      } catch (const JsonReadError&) {
        continue;  // an ssh banner, a login message
      }
      if (auto ship = launch::parse_ship_failure(j)) {
        ::usleep(50000);  // the receiving script's stderr, if any, comes with it
        throw StepError(host_, ship->code, with_stderr(child_.get(), ship->message));
      }
      if (j.is_object() && j.contains("fabkit_agent")) {
        check_agent_version(host_, j);
        hello_ = j;
        return j;
      }
    }
    throw StepError(host_, "pair.launch_failed", "no agent hello in the first 100 lines of output");
  } catch (const WireError& e) {
    ::usleep(50000);  // let a failing launcher finish writing stderr and exit
    child_->exited();
    std::string what = e.kind() == WireErrorKind::kTimeout
                           ? "no hello from the agent within " + std::to_string(timeout_ms) + " ms"
                           : "the launcher ended before the agent said hello (" + child_->describe_exit() + ")";
    throw StepError(host_, "pair.launch_failed", with_stderr(child_.get(), what));
  }
}

void AgentClient::connect(int timeout_ms) {
  auto deadline = wire::deadline_in_ms(timeout_ms);
  const Json port_field = hello_.value("port", Json());
  if (!port_field.is_number_unsigned() || port_field.get<uint64_t>() == 0 ||
      port_field.get<uint64_t>() > 65535)
    throw StepError(host_, "pair.launch_failed",
                    "the agent's hello has no TCP port 1..65535 in field 'port' (got " +
                        port_field.dump().substr(0, 64) + ")");
  const auto port = static_cast<uint16_t>(port_field.get<uint64_t>());
  std::vector<std::string> addrs;
  if (hello_.contains("bind_addr") && hello_["bind_addr"].is_string())
    addrs.push_back(hello_["bind_addr"].get<std::string>());
  else
    for (const auto& a : hello_.value("addresses", Json::array()))
      if (a.is_string() && wire::is_ipv4_literal(a.get<std::string>())) addrs.push_back(a.get<std::string>());
  std::string tried;
  for (const auto& addr : addrs) {
    int left = wire::ms_left(deadline);
    if (left <= 0) break;
    // The agent may have several addresses, and some are not routable from here: give each a
    // slice of the budget so one dead address cannot eat all of it. Only "nothing answered" moves
    // on to the next address: whatever answers must prove the session token, or the session
    // fails closed (an impostor on one address must not get another try, nor hide the real agent).
    auto c = tcp::connect_tcp(addr, port, "", std::min(left, 3000));
    if (c.status != tcp::ConnectStatus::kOpen) {
      tried += (tried.empty() ? "" : "; ") + c.message;
      continue;
    }
    fd_ = std::move(c.fd);
    std::string where = addr + ":" + std::to_string(port);
    try {
      Json info = wire::client_handshake(fd_.get(), token_, "controller", "control", Json::object(), deadline);
      agent_info_ = info;
      control_addr_ = addr;
      return;
    } catch (const WireError& e) {
      fd_.reset();
      switch (e.kind()) {
        // Our agent holds the token we generated and gave it: a process that refuses our proof
        // (kBadToken) or cannot prove the token itself (kImpostor) is not our agent.
        case WireErrorKind::kImpostor:
        case WireErrorKind::kBadToken:
          throw StepError(
              host_, "pair.agent_impostor",
              "the process at " + where +
                  " (an address the agent reported) does not hold this "
                  "session's token, so the session stops here; the token itself was not sent: " +
                  e.what());
        case WireErrorKind::kVersionMismatch:
        case WireErrorKind::kRejected:
          throw StepError(host_, "pair.agent_rejected", "the agent at " + where + " refused the session: " + e.what());
        case WireErrorKind::kTimeout:
          throw StepError(host_, "pair.agent_timeout", "session handshake with " + where + ": " + e.what());
        default:
          throw StepError(host_, "pair.agent_unreachable", "session handshake with " + where + ": " + e.what());
      }
    }
  }
  throw StepError(host_, "pair.agent_unreachable",
                  "could not reach the agent's port " + std::to_string(port) + " on any of its addresses" +
                      (tried.empty() ? std::string(" (it reported none)") : ": " + tried));
}

void AgentClient::lost(const std::string& what) {
  ::usleep(50000);
  bool gone = child_ && child_->exited();
  // The signal by name (SIGABRT: a library aborted; SIGKILL: the OOM killer or a person).
  throw StepError(host_, "pair.agent_lost",
                  with_stderr(child_.get(), what + (gone ? " (agent process: " +
                                                               describe_wait_status(child_->exit_status()) + ")"
                                                         : "")));
}

void AgentClient::send(const std::string& op, const Json& args) {
  wire::Request r;
  r.id = next_id_++;
  r.op = op;
  r.args = args;
  try {
    wire::write_frame(fd_.get(), wire::make_frame(r), wire::deadline_in_ms(10000));
  } catch (const WireError& e) {
    lost("sending '" + op + "': " + e.what());
  }
  pending_.push_back(r.id);
}

Json AgentClient::receive(int timeout_ms, const std::function<void(uint64_t, uint64_t)>& on_progress) {
  FABKIT_ENFORCE(!pending_.empty(), "receive() without a pending request");
  uint64_t id = pending_.front();
  pending_.erase(pending_.begin());
  const auto deadline = wire::deadline_in_ms(timeout_ms);
  wire::Frame f;
  for (;;) {
    // Every frame from the agent (heartbeat, progress, answer) proves it alive: the wait for the
    // next one is bounded by the liveness bound as well as by the request's.
    const bool liveness_first = liveness_ms_ > 0 && liveness_ms_ < wire::ms_left(deadline);
    try {
      f = wire::read_frame(fd_.get(),
                           liveness_first ? wire::deadline_in_ms(liveness_ms_) : deadline);
    } catch (const WireError& e) {
      if (e.kind() == WireErrorKind::kTimeout && liveness_first)
        throw StepError(
            host_, "pair.agent_unresponsive",
            "the agent sent nothing for " + std::to_string(liveness_ms_) +
                " ms while working on a request (it sends a heartbeat every second): its process "
                "is stopped (SIGSTOP, a debugger) or its host is hung; the request's own bound "
                "was " +
                std::to_string(timeout_ms) + " ms");
      if (e.kind() == WireErrorKind::kTimeout)
        throw StepError(host_, "pair.agent_timeout", "no answer from the agent within " + std::to_string(timeout_ms) + " ms");
      lost(std::string("control connection: ") + e.what());
    }
    if (f.type == wire::FrameType::kHeartbeat) continue;
    if (f.type != wire::FrameType::kProgress) break;
    try {
      auto note = wire::parse_progress(f);
      if (note.id == id && on_progress) on_progress(note.done, note.total);
    } catch (const WireError& e) {
      throw StepError(host_, "pair.agent_error", std::string("unreadable progress note: ") + e.what());
    }
  }
  try {
    if (f.type == wire::FrameType::kError) {
      auto e = wire::parse_error(f);
      throw StepError(host_, "pair.agent_error", "the agent ended the session: " + e.code + ": " + e.message);
    }
    auto r = wire::parse_response(f);
    if (r.id != id) throw StepError(host_, "pair.agent_error", "answer to request " + std::to_string(r.id) +
                                                            " while waiting for " + std::to_string(id));
    if (!r.ok) throw StepError(host_, "pair.agent_error", r.error_code + ": " + r.error_message);
    return r.result;
  } catch (const WireError& e) {
    throw StepError(host_, "pair.agent_error", std::string("unreadable answer: ") + e.what());
  }
}

Json AgentClient::call(const std::string& op, const Json& args, int timeout_ms) {
  send(op, args);
  return receive(timeout_ms);
}

void AgentClient::bye() {
  if (fd_.valid()) {
    try {
      wire::write_frame(fd_.get(), wire::make_bye(), wire::deadline_in_ms(1000));
    } catch (const WireError&) {
    }
    fd_.reset();
  }
  if (child_) {
    child_->wait_exit(wire::deadline_in_ms(2000));  // an agent exits promptly after bye
  }
}

}  // namespace fabkit::pair
