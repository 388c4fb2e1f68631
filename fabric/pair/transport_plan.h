// Which transports can run between the two agents, with the per-rank arguments: the RDMA ones run
// on a same-rail pair of ACTIVE HCA ports (rdma_rails.h) of the link layer they need, selected by
// NCCL_IB_HCA where a host sets it (and with a RoCE v2 GID on Ethernet), taken from the agents'
// node reports (rdma and nccl_env sections, docs/json/). Pure.
#pragma once

#include <string>

#include "common/json.h"
#include "fabric/pair/pair_facts.h"

namespace fabkit::pair {

struct TransportPlan {
  bool runnable = true;
  std::string reason;                 // why not, when !runnable
  // rank 0's transport-specific arguments {hca, ib_port, gid_index, link_layer, rate_gbps (the
  // slower port's)}: what the agent's `extra` accepts
  Json extra_a = Json::object();
  Json extra_b = Json::object();
};

bool is_rdma_transport(const std::string& name);
TransportPlan plan_transport(const std::string& name, const AgentFacts& a, const AgentFacts& b);

}  // namespace fabkit::pair
