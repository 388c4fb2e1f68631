// Which transports can run between the two agents, with the per-rank arguments: the RDMA ones need
// an ACTIVE HCA port on each host with the same link layer (and a RoCE v2 GID on Ethernet), taken
// from the agents' node reports (rdma section, docs/json/rdma.md). Pure.
#pragma once

#include <string>

#include "common/json.h"
#include "fabric/pair/pair_facts.h"

namespace fabkit::pair {

struct TransportPlan {
  bool runnable = true;
  std::string reason;                 // why not, when !runnable
  Json extra_a = Json::object();      // rank 0's transport-specific arguments (hca, ib_port, gid_index)
  Json extra_b = Json::object();
};

bool is_rdma_transport(const std::string& name);
// {hca, ib_port, gid_index, link_layer, rate_gbps} of the first ACTIVE port, or null.
Json first_active_rdma_port(const Json& node_report);
TransportPlan plan_transport(const std::string& name, const AgentFacts& a, const AgentFacts& b);

}  // namespace fabkit::pair
