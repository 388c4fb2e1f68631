// hwloc adapter: this machine's topology (live) or an hwloc XML export, turned into the topology
// model. GPUs are found by PCI identity, not by hwloc's cuda/nvml/opencl/rsmi/levelzero
// components: those initialise the GPU runtimes, which takes seconds on a GPU node.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

#include "topo/topology.h"

namespace fabkit::topo {

class HwlocError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The hwloc discovery components never loaded (GPU runtimes; "gl" talks to an X server).
extern const char* const kHwlocSkippedComponents[6];

// This machine, with PCI bridges/devices and OS devices (netdevs, RDMA devices). source
// "hwloc-live". Throws HwlocError naming the failing hwloc call.
Topology load_live_hwloc_topology();
// An hwloc XML export (lstopo --of xml) already in memory; source "hwloc-xml", label names it in
// errors. A version 3.x export throws HwlocError saying this hwloc (2.x) cannot import it.
Topology load_hwloc_xml_buffer(const std::string& xml_text, const std::string& label);
// The runtime hwloc library version, "2.9.0".
std::string hwloc_runtime_version();

}  // namespace fabkit::topo
