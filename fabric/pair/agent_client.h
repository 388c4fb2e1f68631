// The controller's handle on one agent: the launched process, its hello line, and the
// authenticated control connection. Every call is bounded by a deadline, and while a request runs
// by the agent's liveness too (a heartbeat frame every second, agent.h): an agent silent for the
// liveness bound is stopped or hung, and that is reported long before the request's own bound.
// Failures are StepError with the finding code that names them (pair.launch_failed,
// pair.agent_unreachable, pair.agent_rejected, pair.agent_impostor, pair.agent_lost,
// pair.agent_timeout, pair.agent_unresponsive, pair.agent_error, pair.version_mismatch,
// pair.ship_checksum_mismatch, pair.ship_unsafe_dir, pair.ship_failed).
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/json.h"
#include "fabric/launch/child_process.h"
#include "fabric/launch/ship.h"
#include "fabric/wire/socket_io.h"

namespace fabkit::pair {

class StepError : public std::runtime_error {
 public:
  StepError(std::string host, std::string code, const std::string& message)
      : std::runtime_error(message), host_(std::move(host)), code_(std::move(code)) {}
  const std::string& host() const { return host_; }  // the agent that failed
  const std::string& code() const { return code_; }

 private:
  std::string host_;
  std::string code_;
};

// The agent's hello must name this controller's protocol and fabkit version: throws StepError
// pair.version_mismatch naming both versions otherwise.
void check_agent_version(const std::string& host, const Json& hello);

class AgentClient {
 public:
  AgentClient(std::string host, std::string token) : host_(std::move(host)), token_(std::move(token)) {}
  const std::string& host() const { return host_; }

  // Spawns the launcher; its stdin gets the command's payload (--ship: the binary, within
  // timeout_ms) and then the token.
  void launch(const launch::RemoteCommand& command, int timeout_ms);
  Json await_hello(int timeout_ms);                     // the agent's one JSON line on stdout
  // Tries the hello's addresses in order until one answers, then runs the handshake there; an
  // answer that cannot prove the token is pair.agent_impostor and ends the attempt (fail closed).
  void connect(int timeout_ms);
  // The hello document as await_hello() stores it; tests set it to point connect() at addresses.
  void set_hello(const Json& hello) { hello_ = hello; }
  const Json& agent_info() const { return agent_info_; }  // the agent's welcome (name, version)
  // The address connect() reached the agent on and where it proved the session token: an address
  // of this host the controller vouches for itself (session_peers.h). "" before connect().
  const std::string& control_addr() const { return control_addr_; }
  // While waiting for an answer: the longest silence (no heartbeat, progress note or answer)
  // taken for a live agent. 0 (the default) = only the request's own bound.
  void set_liveness_ms(int ms) { liveness_ms_ = ms; }
  void send(const std::string& op, const Json& args);
  // Result of the oldest pending request. Progress notes the agent sends before it (a request
  // with "progress": true) go to on_progress (sizes done, total); timeout_ms bounds the whole wait.
  Json receive(int timeout_ms, const std::function<void(uint64_t, uint64_t)>& on_progress = {});
  Json call(const std::string& op, const Json& args, int timeout_ms);
  void bye();                                           // best effort, then stop the process
  launch::ChildProcess* child() { return child_.get(); }

 private:
  [[noreturn]] void lost(const std::string& what);
  std::string host_, token_;
  std::unique_ptr<launch::ChildProcess> child_;
  Json hello_ = Json::object();
  Json agent_info_ = Json::object();
  std::string control_addr_;
  int liveness_ms_ = 0;
  wire::Fd fd_;
  uint64_t next_id_ = 1;
  std::vector<uint64_t> pending_;
};

}  // namespace fabkit::pair
