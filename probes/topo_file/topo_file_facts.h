// Probe 4, NCCL_TOPO_FILE: the topology file NCCL will load instead of probing the PCI tree (set
// in containers/VMs that hide it). A wrong one is silent in NCCL: a missing file is ignored, a
// malformed one fails init, and stale bus ids or net names make NCCL pick far NICs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"
#include "probes/probe_context.h"
#include "topo/topology_file.h"

namespace fabkit::probes {

struct TopoFileFacts {
  std::optional<std::string> path;             // nullopt: neither --topo nor NCCL_TOPO_FILE
  std::string source;                          // "--topo" or "NCCL_TOPO_FILE"
  bool present = false;                        // the file exists
  std::optional<topo::LoadedTopology> loaded;  // parsed (absent when missing or malformed)
  std::string error;                           // the parser's file:line:element message
  // GPU/NIC bus ids the file names, checked against <sys>/bus/pci/devices (normalised).
  bool pci_checked = false;                      // the sysfs PCI directory exists here
  std::map<std::string, bool> endpoint_present;  // bus id -> present in sysfs
};

TopoFileFacts gather_topo_file(const ProbeContext& ctx);
// Pure. rdma_devices: this node's RDMA device names (nullopt when unknown: the check is skipped).
std::vector<Finding> judge_topo_file(const TopoFileFacts& facts,
                                     const std::optional<std::vector<std::string>>& rdma_devices);
Json to_json(const TopoFileFacts& facts);

}  // namespace fabkit::probes
