#include "fabric/gpu_active/sysfs_link.h"

#include <fstream>
#include <system_error>

#include "topo/pci_bus_id.h"

namespace fabkit::fabric {
namespace {

std::string first_line(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::string s;
  std::getline(f, s);
  return s;
}

topo::PcieLink max_link(const std::filesystem::path& dir) {
  return {topo::pcie_generation_from_speed(first_line(dir / "max_link_speed")),
          topo::pcie_width_from_text(first_line(dir / "max_link_width"))};
}

}  // namespace

SysfsLinkCapability read_link_capability(const std::filesystem::path& sys_root,
                                         const std::string& bus_id) {
  SysfsLinkCapability c;
  std::filesystem::path dev = sys_root / "bus" / "pci" / "devices" / bus_id;
  c.device_max = max_link(dev);
  // /sys/bus/pci/devices/X is a link into /sys/devices/pci0000:00/.../X: its parent is the port
  // (a root port or a switch's downstream port) the link trains against.
  std::error_code ec;
  std::filesystem::path real = std::filesystem::canonical(dev, ec);
  if (ec) return c;
  std::filesystem::path parent = real.parent_path();
  if (topo::parse_pci_address(parent.filename().string())) c.upstream_max = max_link(parent);
  return c;
}

}  // namespace fabkit::fabric
