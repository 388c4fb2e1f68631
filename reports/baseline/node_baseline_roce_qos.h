// Node baseline for the `roce_qos` section: a RoCE port whose trust mode, the priority NCCL's
// traffic lands on, PFC priorities, ECN on that priority or netdev MTU changed since the saved
// report (a reboot that lost `mlnx_qos` settings is the usual cause). Pure, like node_baseline.h.
#pragma once

#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"

namespace fabkit::reports::baseline {

struct RoceQosChange {
  std::string port;   // "mlx5_2:1"
  std::string field;  // "trust", "nccl_priority", "pfc_priorities", "ecn", "netdev_mtu"
  std::string old_value, new_value;
};

struct RoceQosBaseline {
  bool present = false;  // either report has a RoCE port
  std::vector<RoceQosChange> changes;
  std::vector<Finding> findings;
};

// A value unknown in either report (DCB not read, a file not exposed) is not compared.
RoceQosBaseline compare_roce_qos_baseline(const Json& old_doc, const Json& new_doc);
Json roce_qos_baseline_json(const RoceQosBaseline& b);
std::string roce_qos_baseline_text(const RoceQosBaseline& b);

}  // namespace fabkit::reports::baseline
