// Probe 6, locality: where each GPU sits relative to the NICs (NCCL path levels) and NUMA nodes,
// from hwloc. Live only on the live machine; under --sysroot it reads <sysroot>/hwloc.xml when the
// tree has one (an `lstopo --of xml` export taken with the sysfs copy) and is skipped otherwise,
// because hwloc reads the running machine, not the fixture.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"
#include "probes/probe_context.h"
#include "topo/topology.h"

namespace fabkit::probes {

struct LocalityFacts {
  std::string source = "hwloc";
  std::string input;  // "live" or the hwloc XML path
  bool skipped = false;
  std::string skip_reason;
  std::string error;  // hwloc failed: the reason (then topology is empty)
  std::optional<topo::Topology> topology;
  double load_ms = 0;  // wall time of the hwloc load + conversion
  std::string hwloc_version;
};

LocalityFacts gather_locality(const ProbeContext& ctx);
// Pure. Findings about one topology model (also used by `fabcheck topo FILE`): per-GPU nearest NIC,
// GPUs whose nearest NIC is only reachable across NUMA nodes (SYS), no GPUs / no NICs.
std::vector<Finding> judge_topology_locality(const topo::Topology& t, const std::string& where);
std::vector<Finding> judge_locality(const LocalityFacts& facts);
Json to_json(const LocalityFacts& facts);

}  // namespace fabkit::probes
