// The fixed table of operations an agent performs for its controller. Each handler validates its
// arguments (wire::get_* name the bad field) and returns a JSON result; failures the controller
// must report by name are AgentOpError {code, message}.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>

#include "common/json.h"
#include "fabric/agent/port_listener.h"
#include "fabric/tcp/tcp_test.h"
#include "fabric/wire/messages.h"

namespace fabkit::agent {

class AgentOpError : public std::runtime_error {
 public:
  AgentOpError(std::string code, const std::string& message)
      : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

class AgentSession {
 public:
  AgentSession(std::string token, int idle_timeout_ms)
      : token_(std::move(token)), idle_timeout_ms_(idle_timeout_ms) {}
  // Throws wire::WireError (bad arguments) or AgentOpError (the operation failed).
  Json handle(const wire::Request& req);
  // Argument validation only, for the fuzz target: parses args exactly as handle() would.
  static void validate(const wire::Request& req);
  // Where progress notes go while a request runs (the control connection); none: not sent.
  void set_progress_writer(std::function<void(const wire::Frame&)> w) { progress_writer_ = std::move(w); }
  // The fabcheck executable whose `agent-runner` runs each all-reduce in a child
  // (transport_child.h); /proc/self/exe unless a test names the built fabcheck.
  void set_runner_program(std::string p) { runner_program_ = std::move(p); }

 private:
  Json facts();
  Json tcp_serve(const Json& args);
  Json tcp_stop(const Json& args);
  Json port_listen(const Json& args);
  Json free_port(const Json& args);
  Json set_peers(const Json& args);
  void check_targets(const wire::Request& req) const;  // AgentOpError agent.target_not_peer
  std::string token_;
  std::set<std::string> peers_;  // set once per session by the controller ("set_peers")
  bool peers_set_ = false;
  int idle_timeout_ms_;
  int next_server_id_ = 1;
  std::map<int, std::unique_ptr<tcp::TcpTestServer>> servers_;
  std::unique_ptr<PortListener> port_listener_;
  std::function<void(const wire::Frame&)> progress_writer_;
  std::string runner_program_ = "/proc/self/exe";
};

}  // namespace fabkit::agent
