// The agent's own list of IPv4 interfaces, in the shape of the node report's "net" section
// (docs/json/), used when the node probe has no "net" section to offer (a build without
// the net probe). Candidate interface pairs come from this list.
#pragma once

#include "common/json.h"
#include "common/roots.h"

namespace fabkit::agent {

// [{name, up, running, mtu, speed_mbps|null, kind, addresses:[{family, address, prefix_len}]}]
Json local_interfaces(const SystemRoots& roots);

// interfaces[] of report["net"] when present (source "net"), else local_interfaces (source
// "getifaddrs"): {"source": ..., "interfaces": [...]}.
Json interfaces_for_report(const Json& node_report, const SystemRoots& roots);

}  // namespace fabkit::agent
