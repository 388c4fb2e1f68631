#include "fabric/agent/agent_commands.h"

#include <algorithm>

#include "common/report_json.h"
#include "fabric/agent/agent_ofi.h"
#include "fabric/agent/agent_rdma.h"
#include "fabric/agent/agent_requests.h"
#include "fabric/agent/agent_transports.h"
#include "fabric/agent/local_interfaces.h"
#include "fabric/agent/transport_child.h"
#include "fabric/wire/wire_error.h"
#include "probes/node_probe.h"

namespace fabkit::agent {
namespace {

using wire::get_int;
using wire::get_int_or;
using wire::get_ipv4;

Json port_probe(const Json& a) {
  std::string addr = get_ipv4(a, "addr");
  auto port = static_cast<uint16_t>(get_int(a, "port", 1, 65535));
  std::string local = get_ipv4(a, "local_addr");
  int timeout_ms = static_cast<int>(get_int(a, "timeout_ms", 1, kMaxTimeoutMs));
  auto c = tcp::connect_tcp(addr, port, local, timeout_ms);
  Json j = {{"status", tcp::to_string(c.status)}, {"timeout_ms", timeout_ms}};
  j["connect_time_us"] = c.status == tcp::ConnectStatus::kOpen ? Json(c.connect_time_us) : Json();
  j["error"] = c.message.empty() ? Json() : Json(c.message);
  return j;
}

}  // namespace

void AgentSession::validate(const wire::Request& req) { validate_request(req); }

Json AgentSession::handle(const wire::Request& req) {
  validate(req);  // every argument is checked before anything runs
  check_targets(req);
  const Json& a = req.args;
  if (req.op == "set_peers") return set_peers(a);
  if (req.op == "facts") return facts();
  if (req.op == "transports") return {{"transports", agent_transport_names()}};
  if (req.op == "tcp_serve") return tcp_serve(a);
  if (req.op == "tcp_stop") return tcp_stop(a);
  if (req.op == "tcp_measure") return tcp::to_json(tcp::measure_link(parse_link_spec(a, token_)));
  if (req.op == "port_listen") return port_listen(a);
  if (req.op == "port_probe") return port_probe(a);
  if (req.op == "port_close") {
    uint64_t accepted = port_listener_ ? port_listener_->accepted() : 0;
    port_listener_.reset();
    return {{"accepted", accepted}};
  }
  if (req.op == "free_port") return free_port(a);
  if (req.op == "rdma_rc") return run_rc_op_live(parse_rc_args(a), token_);
  if (req.op == "ofi_rdm") {
    // In a runner child, as the all-reduces: libfabric's providers are not ours to trust.
    RunnerChildSpec spec;
    spec.program = runner_program_;
    spec.transport = kOfiRunnerName;
    spec.args = a;
    spec.token = token_;
    spec.deadline_ms = parse_ofi_args(a).budget_ms;
    return run_transport_in_child(spec, {});
  }
  // op == "allreduce" (validate() accepted nothing else)
  TransportArgs t = parse_transport_args(a);
  std::function<void(size_t, size_t)> on_size_done;
  if (t.progress && progress_writer_)
    on_size_done = [this, id = req.id](size_t done, size_t total) {
      progress_writer_(wire::make_frame(wire::ProgressNote{id, done, total}));
    };
  const std::string name = wire::get_string(a, "transport", 64);
  const auto known = agent_transport_names();
  if (std::find(known.begin(), known.end(), name) == known.end())
    return run_agent_transport_here(name, t, token_, on_size_done);  // throws unknown_transport
  // In a child (transport_child.h): a runner's library that aborts ends that run, not the agent.
  RunnerChildSpec spec;
  spec.program = runner_program_;
  spec.transport = name;
  spec.args = a;
  spec.token = token_;
  spec.deadline_ms = t.sweep_timeout_ms;
  return run_transport_in_child(spec, on_size_done);
}

Json AgentSession::set_peers(const Json& a) {
  if (peers_set_)
    throw AgentOpError("agent.peers_already_set", "the session's peer addresses are set once, after the handshake");
  for (const auto& p : parse_peer_addresses(a)) peers_.insert(p);
  peers_set_ = true;
  return {{"peers", peers_.size()}};
}

void AgentSession::check_targets(const wire::Request& req) const {
  for (const auto& t : request_targets(req))
    if (peers_.count(t) == 0)
      throw AgentOpError("agent.target_not_peer",
                         "'" + req.op + "' would contact " + t + ", which is not an address of this session's peer agents" +
                             (peers_set_ ? "" : " (the controller has not sent set_peers)") +
                             "; agents only test paths to each other");
}

Json AgentSession::facts() {
  ProbeContext ctx;
  ctx.env = Environment::from_process();
  ctx.roots = SystemRoots::live_system(ctx.env.get("HOME").value_or(""));
  // libfabric in a child: its providers' signal handlers must not change how the agent dies.
  ctx.options.ofi_discovery_program = runner_program_;
  Report r = probe_this_node(ctx);  // the same probe path as `fabcheck node`
  Json report = report_to_json(r);
  Json ifs = interfaces_for_report(report, ctx.roots);
  return {{"report", report}, {"interfaces", ifs}, {"transports", agent_transport_names()}};
}

Json AgentSession::tcp_serve(const Json& a) {
  std::string addr = get_ipv4(a, "addr");
  try {
    auto server = std::make_unique<tcp::TcpTestServer>(addr, token_, idle_timeout_ms_, ifname_arg(a, "ifname"));
    int id = next_server_id_++;
    uint16_t port = server->port();
    servers_[id] = std::move(server);
    return {{"server_id", id}, {"port", port}};
  } catch (const wire::WireError& e) {
    throw AgentOpError("agent.bind_failed", e.what());
  }
}

Json AgentSession::tcp_stop(const Json& a) {
  int id = static_cast<int>(get_int(a, "server_id", 1, INT32_MAX));
  auto it = servers_.find(id);
  if (it == servers_.end())
    throw AgentOpError("agent.no_such_server", "no test server with id " + std::to_string(id));
  uint64_t rejected = it->second->rejected_connections();
  servers_.erase(it);
  return {{"rejected_connections", rejected}};
}

Json AgentSession::port_listen(const Json& a) {
  std::string addr = get_ipv4(a, "addr");
  auto port = static_cast<uint16_t>(get_int(a, "port", 1, 65535));
  port_listener_.reset();
  try {
    port_listener_ = std::make_unique<PortListener>(addr, port);
    return {{"status", "listening"}, {"error", nullptr}};
  } catch (const wire::WireError& e) {
    // EADDRINUSE here is a finding, not a tool failure: torchrun's rank 0 would fail the same way.
    return {{"status", "in_use"}, {"error", e.what()}};
  }
}

Json AgentSession::free_port(const Json& a) {
  try {
    wire::Fd fd = tcp::listen_tcp(get_ipv4(a, "addr"), 0);
    return {{"port", tcp::local_port(fd.get())}};
  } catch (const wire::WireError& e) {
    throw AgentOpError("agent.bind_failed", e.what());
  }
}

}  // namespace fabkit::agent
