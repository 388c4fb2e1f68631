// NCCL_IB_TC from what the RoCE fabric is set up for, over a node report's `roce_qos` section
// (docs/json/roce_qos.md): the builder derives the value, `validate` checks that the value still
// lands on a lossless priority. Pure, on the report's JSON (profile/ sits below probes/).
#pragma once

#include <optional>
#include <string>

#include "common/json.h"

namespace fabkit::profile {

struct RoceTcChoice {
  std::optional<int> traffic_class;  // nullopt: no value to set (why says so)
  std::string why;                   // the evidence: "trust dscp, PFC on 3, DSCP 26 -> 3"
};

// The traffic class NCCL_IB_TC should carry on this port (a `roce_qos.ports[]` object): the port's
// forced traffic_class when MLNX_OFED sets one; under trust dscp, DSCP 26 when it maps to a
// PFC-enabled priority, else the lowest DSCP of the lowest lossless priority above 0, as
// DSCP * 4 + 2 (ECN-capable, as NVIDIA's RoCE guides write 106); nothing under trust pcp (the TC
// does not pick the priority) or when DCB was not read.
RoceTcChoice lossless_traffic_class(const Json& port);

// The priority `traffic_class` lands on at this port under trust dscp (the APP table); nullopt
// when trust is not dscp or the table is unknown. `pfc_on` tells whether PFC is enabled on it.
std::optional<int> priority_for_traffic_class(const Json& port, int traffic_class, bool* pfc_on);

}  // namespace fabkit::profile
