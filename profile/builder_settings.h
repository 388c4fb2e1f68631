// The rules that turn node facts (and pair verdicts) into settings, one function per decision.
// Internal to the builder; exposed for tests.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "profile/builder_facts.h"

namespace fabkit::profile {

// host -> setting, for one variable; the builder folds equal values into a cluster setting.
using PerHost = std::map<std::string, Setting>;

struct TransportChoice {
  bool rdma = false;
  Setting ib_disable;
  std::optional<std::string> measured_transport;  // from a pair verdict
  std::vector<std::string> measured_hosts;
};

TransportChoice choose_transport(const std::vector<NodeFacts>& nodes,
                                 const std::vector<PairVerdict>& pairs);
// The ports NCCL should use on a node: InfiniBand ones when any, else Ethernet (RoCE) ones;
// NCCL would otherwise mix both on one host.
std::vector<HcaPort> chosen_ports(const NodeFacts& n);
std::optional<std::string> chosen_interface(const NodeFacts& n,
                                            const std::vector<PairVerdict>& pairs, bool* measured);

std::map<std::string, PerHost> choose_settings(const std::vector<NodeFacts>& nodes,
                                               const std::vector<PairVerdict>& pairs,
                                               const TransportChoice& transport,
                                               const NcclInfo& nccl,
                                               std::optional<int> master_port);

// FI_PROVIDER, FI_EFA_USE_DEVICE_RDMA, FI_EFA_FORK_SAFE for the hosts whose report has EFA
// devices (efa_settings.cc); hosts without EFA get none of them.
void efa_settings(const std::vector<NodeFacts>& nodes, std::map<std::string, PerHost>& s);

}  // namespace fabkit::profile
