// A PCI device's link capability from sysfs: its max_link_speed/width and those of the port
// above it (the parent directory of its /sys/devices path), for the PCIe basis of the active
// check's copy expectations.
#pragma once

#include <filesystem>
#include <string>

#include "topo/pcie_link.h"

namespace fabkit::fabric {

struct SysfsLinkCapability {
  topo::PcieLink device_max;    // DIR/max_link_speed, max_link_width
  topo::PcieLink upstream_max;  // the same of the bridge port above (unknown at a root bus)
};

// sys_root: "/sys" or a --sysroot tree's sys/. bus_id: "0000:18:00.0". Unknown halves stay
// empty (a missing file, "Unknown speed", a device on the root bus).
SysfsLinkCapability read_link_capability(const std::filesystem::path& sys_root,
                                         const std::string& bus_id);

}  // namespace fabkit::fabric
