// Which HCA ports of two hosts to test against each other. On a rail-optimised fabric (one
// switch plane per HCA index: mlx5_0 of every node on rail 0, mlx5_1 on rail 1, ...) a port is
// reachable only from the same rail's ports; testing every A x B pair reports the cross-rail
// ones as failures that are unreachable by design. Pure: from the two node reports' rdma sections.
//
// A port's rail is its subnet: on InfiniBand the subnet prefix (the top 64 bits of GID 0), on
// RoCE the subnet of its RoCE v2 GID's address (IPv4 /24, IPv6 /64: the reports carry no prefix
// length). When the subnets do not tell rails apart (one subnet for every port, or GIDs unknown)
// the ports are paired by index order in locality order (NUMA node from the report's locality
// section, then HCA name, port): rail i = the i-th port of each host.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "fabric/pair/pair_facts.h"

namespace fabkit::pair {

struct RailPlan {
  std::vector<RcPortPair> pairs;          // same-rail pairs to test, each with its rail named
  int cross_rail_not_applicable = 0;      // A x B combinations (same link layer) on different rails
  std::vector<std::string> unpaired;      // "A mlx5_4:1 (rail 10.0.4.0/24): no port of B on it"
  std::string method;                     // "subnet" | "index" | "" (no ACTIVE ports)
};

RailPlan plan_rails(const Json& report_a, const Json& report_b);

// The value of NCCL variable `name` as a host's node report recorded it (its nccl_env section): the
// first entry of that name with a string value (the agent may be hostile or broken), or nullopt.
std::optional<std::string> nccl_env_value(const Json& report, const std::string& name);

// The link layers of a host's ACTIVE RDMA ports ("InfiniBand", "Ethernet"), one per port.
std::vector<std::string> active_link_layers(const Json& report);

// The rail key of one port of a node report ("fe80:0000:0000:0001::/64", "10.0.3.0/24"), or ""
// when its GIDs do not say.
std::string rail_subnet(const Json& port);

}  // namespace fabkit::pair
