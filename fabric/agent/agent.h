// `fabcheck agent`: the far end of `fabcheck pair`. It listens on one address, runs the handshake
// (wire/handshake.h) with every connection concurrently (wire/handshake_gate.h: each under an
// absolute deadline, the oldest pending one closed at the cap), serves the first controller that
// proves the session token, answers requests from a fixed table of operations (agent_commands.h)
// with a heartbeat frame every second while one runs, and exits when the controller says bye,
// when the controller's connection drops, or when it has been idle too long. Nothing it receives
// is executed: requests name an operation and carry typed, range-checked arguments.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/json.h"

namespace fabkit::agent {

struct AgentOptions {
  std::string bind_addr;          // "" = all addresses (the token still gates every connection)
  uint16_t port = 0;              // 0 = ephemeral; reported in the hello line
  std::string token;              // from stdin or FABKIT_SESSION_TOKEN, never argv
  std::string name;               // how the controller calls this host (for messages)
  int accept_timeout_ms = 30000;  // how long to wait for the controller to connect
  int idle_timeout_ms = 120000;   // exit after this long without a request
  // Per connection, from accept to proof: a client that trickles bytes is cut off at this
  // deadline, and it never delays another connection's handshake.
  int handshake_timeout_ms = 5000;
  // Unauthenticated connections in handshake at once; at the cap the oldest is closed to make
  // room (a real controller's handshake takes a round trip or two, so it is never the oldest for
  // long). Each costs a descriptor: `fabcheck agent` raises its descriptor limit to the hard one.
  int max_pending_handshakes = 1024;
  // This agent is a copy `fabcheck pair --ship` sent and checked (reported in the hello).
  bool shipped = false;
  // The executable started for each all-reduce runner child (transport_child.h): this very
  // binary. Tests running the agent inside a test executable name the built fabcheck.
  std::string runner_program = "/proc/self/exe";
};

enum class AgentExit { kBye, kControllerDropped, kIdleTimeout, kNoController, kProtocolError };
const char* to_string(AgentExit e);

// on_listening receives the hello document (port, addresses, pid, version) once the socket is
// bound; the CLI prints it as the one JSON line the controller waits for. log receives one line
// per notable event (rejected token, exit reason) for the agent's stderr.
AgentExit run_agent(const AgentOptions& opts, const std::function<void(const Json&)>& on_listening,
                    const std::function<void(const std::string&)>& log);

}  // namespace fabkit::agent
