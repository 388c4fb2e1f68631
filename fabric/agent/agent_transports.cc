// Wiring of the all-reduce runners into the agent. FABKIT_PAIR_WITH_ALLREDUCE is defined by
// fabric/agent/CMakeLists.txt when fabric/allreduce is part of the build.
#include "fabric/agent/agent_transports.h"

#include "fabric/agent/agent_commands.h"
#include "fabric/wire/messages.h"
#include "fabric/wire/wire_error.h"

#if FABKIT_PAIR_WITH_ALLREDUCE
#include "fabric/allreduce/runners.h"
#endif
#if FABKIT_PAIR_WITH_NCCL
#include "fabric/nccl_runner/nccl_runner.h"
#endif

namespace fabkit::agent {

#if FABKIT_PAIR_WITH_ALLREDUCE

namespace {
fabric::AllreduceSpec to_spec(const TransportArgs& a, const std::string& token) {
  fabric::AllreduceSpec s;
  s.rank = a.rank;
  s.world_size = a.world_size;
  s.ring_addrs = a.ring_addrs;
  s.local_addr = a.local_addr;
  s.peer_addr = a.peer_addr;
  s.port = a.port;
  s.token = token;
  s.sizes_bytes = a.sizes_bytes;
  s.iters = a.iters;
  s.warmup_iters = a.warmup_iters;
  s.timeout_ms = a.timeout_ms;
  s.ifname = a.ifname;
  return s;
}
}  // namespace

std::vector<std::string> agent_transport_names() {
  std::vector<std::string> names = {"raw-exchange", "fabkit-socket", "gloo-tcp", "gloo-ibverbs"};
#if FABKIT_PAIR_WITH_NCCL
  // Listed even without a GPU: the runner answers "unavailable" with its reason, which the
  // report shows instead of silently leaving NCCL out.
  for (const char* n : {"nccl-socket", "nccl-ib", "nccl-roce"}) names.push_back(n);
#endif
  return names;
}

Json run_agent_transport_here(const std::string& name, const TransportArgs& a, const std::string& token,
                              const std::function<void(size_t, size_t)>& on_size_done) {
  fabric::AllreduceSpec spec = to_spec(a, token);
  spec.on_size_done = on_size_done;
  if (!a.ring_orders.empty()) {
    if (name != "fabkit-socket")
      throw AgentOpError(
          "agent.bad_transport_args",
          "ring_orders (a ring session) is run by fabkit-socket only, not '" + name + "'");
    // Progress per size would count every order's sizes as one sweep's: not passed on.
    spec.on_size_done = nullptr;
    return fabric::to_json(fabric::run_fabkit_socket_ring_session(spec, a.ring_orders));
  }
  if (name == "raw-exchange") return fabric::to_json(fabric::run_raw_exchange(spec));
  if (name == "fabkit-socket") return fabric::to_json(fabric::run_fabkit_socket_allreduce(spec));
  if (name == "gloo-tcp") return fabric::to_json(fabric::run_gloo_tcp_allreduce(spec));
  if (name == "gloo-ibverbs") {
    if (a.rdma.hca.empty()) throw AgentOpError("agent.bad_transport_args", "gloo-ibverbs needs extra.hca");
    return fabric::to_json(fabric::run_gloo_ibverbs_allreduce(spec, a.rdma.hca, a.rdma.ib_port, a.rdma.gid_index));
  }
#if FABKIT_PAIR_WITH_NCCL
  if (name == "nccl-socket" || name == "nccl-ib" || name == "nccl-roce") {
    fabric::NcclTransportChoice choice;
    choice.network = name == "nccl-socket" ? "Socket" : name == "nccl-ib" ? "IB" : "RoCE";
    if (name != "nccl-socket") {
      choice.hca = a.rdma.hca;
      choice.port = a.rdma.ib_port;
      choice.gid_index = a.rdma.gid_index;
      if (choice.hca.empty()) throw AgentOpError("agent.bad_transport_args", name + " needs extra.hca");
    }
    return fabric::to_json(fabric::run_nccl_allreduce(spec, choice));
  }
#endif
  throw AgentOpError("agent.unknown_transport", "this agent cannot run transport '" + name + "'");
}

#else

std::vector<std::string> agent_transport_names() { return {}; }

Json run_agent_transport_here(const std::string& name, const TransportArgs&, const std::string&,
                              const std::function<void(size_t, size_t)>&) {
  throw AgentOpError("agent.unknown_transport",
                     "this fabcheck was built without the all-reduce runners (fabric/allreduce); '" +
                         name + "' cannot run");
}

#endif

}  // namespace fabkit::agent
