// NCCL_IB_SL from what the InfiniBand subnet manager set up, over a node report's `ib_qos`
// section (docs/json/ib_qos.md): the builder derives the value from the SM's PathRecord SL,
// `validate` checks that the value still reaches a data VL and still matches the PathRecord.
// Pure, on the report's JSON (profile/ sits below probes/).
#pragma once

#include <optional>
#include <string>

#include "common/json.h"

namespace fabkit::profile {

struct IbSlChoice {
  std::optional<int> sl;  // nullopt: nothing to set (why says so)
  std::string why;        // the evidence: "PathRecord SL 2 -> VL2 (OperationalVLs VL0-3)"
};

// The SL NCCL_IB_SL should carry on this port (an `ib_qos.ports[]` object): the SL of the SM's
// PathRecord for the port's own GID, when it reaches a data VL (not VL15, below OperationalVLs).
IbSlChoice path_record_sl(const Json& port);

// Whether `sl` reaches a data VL at this port; nullopt when the table was not read. `vl` gets the
// VL it maps to.
std::optional<bool> sl_reaches_data_vl(const Json& port, int sl, int* vl);

}  // namespace fabkit::profile
