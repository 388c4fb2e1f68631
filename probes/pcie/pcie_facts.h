// Probe 9, PCIe link health from sysfs (no GPU or driver needed): every GPU (NVIDIA/AMD, as the
// locality probe counts them), NIC (class 0x02, or 0x0c06 InfiniBand), NVSwitch (NVIDIA, class
// 0x0680) and every bridge between each of them
// and its root port, with the link each trained (current_link_speed/width) against what both ends
// can (max_link_speed/width), and the AER counters (aer_dev_correctable/nonfatal/fatal). A GPU at
// Gen5 x8 moves half the data of Gen5 x16 and nothing logs an error: this is where it shows.
//
// The sysfs layout (drivers/pci/pci-sysfs.c, drivers/pci/pcie/aer.c): /sys/bus/pci/devices/BDF
// are symlinks into /sys/devices/pciDDDD:BB/<root port>/<switch up>/<switch down>/<device>, so
// the path names every bridge above a device. A link is seen from both of its ends: a root port
// or switch downstream port reports its downstream link, an endpoint or switch upstream port its
// upstream link. The judge therefore looks at each upstream-facing device and its parent port.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/finding.h"
#include "common/json.h"
#include "probes/probe_context.h"
#include "topo/pcie_link.h"

namespace fabkit::probes {

// What a device is, from its sysfs class/vendor: the devices the probe looks at and the bridges
// on their way to the root complex.
enum class PciRole { kGpu, kNic, kNvSwitch, kBridge };
const char* to_string(PciRole role);  // "gpu", "nic", "nvswitch", "bridge"

// Where a device sits on its link, inferred from the path (sysfs has no port-type attribute and
// unprivileged reads of config space stop before the PCIe capability): a bridge right under a
// host bridge is a root port; under a root or downstream port sits an upstream-facing device (an
// endpoint or a switch's upstream port); a bridge under an upstream port is a downstream port.
enum class PciPort { kEndpoint, kRootPort, kUpstreamPort, kDownstreamPort };
const char* to_string(PciPort port);  // "endpoint", "root_port", "upstream_port", "downstream_port"

// One aer_dev_* file: "RxErr 0\nBadTLP 3\n...\nTOTAL_ERR_COR 3\n" (drivers/pci/pcie/aer.c,
// aer_stats_dev_attr): one "NAME count" line per error bit the kernel names, then the total.
struct AerCounters {
  std::map<std::string, uint64_t> by_name;  // without the TOTAL_ line
  std::optional<uint64_t> total;            // TOTAL_ERR_COR / TOTAL_ERR_NONFATAL / TOTAL_ERR_FATAL
};

struct PcieDevice {
  std::string bus_id;  // "0000:18:00.0"
  PciRole role = PciRole::kBridge;
  PciPort port = PciPort::kEndpoint;
  std::string vendor_id;   // "0x10de" as sysfs writes it ("" when unreadable)
  std::string device_id;   // "0x2330"
  std::string class_code;  // "0x030200"
  std::string name;        // from pci.ids: "NVIDIA Corporation GH100[H100 SXM5 80GB]"; "" unknown
  std::optional<std::string> driver;  // basename of the `driver` link: "nvidia", "mlx5_core"
  std::optional<std::string> parent;  // bus id of the bridge above; nullopt: on a host bridge
  std::string sysfs_path;             // "devices/pci0000:15/0000:15:01.0/..." under the sys root
  // The raw attribute text (nullopt: the file is absent, e.g. conventional PCI or a VM's virtual
  // device) and what it means.
  std::optional<std::string> current_speed_text, max_speed_text;  // "16.0 GT/s PCIe"
  std::optional<std::string> current_width_text, max_width_text;  // "8"
  topo::PcieLink current, max;
  // Absent when the files are (kernel < 4.19, CONFIG_PCIEAER off, or a device without AER).
  std::optional<AerCounters> aer_correctable, aer_nonfatal, aer_fatal;
  // The rise of each total between the two reads of a live run (aer_interval_ms apart).
  std::optional<uint64_t> aer_correctable_rise, aer_nonfatal_rise, aer_fatal_rise;
  std::vector<std::string> below;  // bridges: the selected devices under this one (bus ids)
};

struct PcieFacts {
  bool pci_bus_present = false;     // <sys>/bus/pci/devices exists
  std::vector<PcieDevice> devices;  // selected devices, then the bridges above them; bus-id order
  int aer_interval_ms = 0;          // > 0: the AER totals were read twice this far apart
  std::string names_source;         // the pci.ids file names came from ("" none found)
  std::vector<SysError> errors;
  // When gather_pcie read the AER files (not in the JSON): reread_pcie_aer's interval starts here.
  std::chrono::steady_clock::time_point aer_first_read{};
};

// Walks <sys>/bus/pci/devices through ctx.roots and reads the first AER totals.
PcieFacts gather_pcie(const ProbeContext& ctx);
// Live runs: read the AER totals again and keep the rises. The node probe calls it after the
// other probes, so the time they take is the interval; it sleeps only for what is left of
// min_interval_ms. A capture (roots.live false) or min_interval_ms <= 0 reads nothing.
void reread_pcie_aer(const ProbeContext& ctx, PcieFacts& facts, int min_interval_ms);

// The link an upstream-facing device (endpoint, switch upstream port) reaches its parent port
// over: trained is the device's current_link_* (its parent's when the device has none: both ends
// of a link report the same link), capable the lower of both ends' max. nullopt for root and
// downstream ports: the device below reports their link.
struct PcieLinkState {
  topo::PcieLink trained, capable;
  topo::PcieLink device_max, parent_max;  // parent_max empty without a parent port
  bool has_link_files = false;            // a current or max attribute exists on either end
  // The current attribute exists but is not a rate/lane count ("Unknown", "0"): link down or a
  // device that does not answer.
  bool unreadable = false;
  std::string trained_text;  // "Unknown x0": what the unreadable attributes said
};
std::optional<PcieLinkState> link_state(const PcieFacts& facts, const PcieDevice& device);
// How the judge sees a device's upstream link: "ok", "width_degraded", "speed_degraded",
// "speed_low_gpu" (a link carrying a GPU below its speed: maybe idle power saving), "unknown" (the
// link reads "Unknown" or 0 lanes), "no_link_info" (no link attributes: conventional PCI or a
// virtual device); "" for root and downstream ports, whose link the device below reports.
std::string link_status(const PcieFacts& facts, const PcieDevice& device);
// One direction's data rate in GB/s (topo::pcie_data_rate_gbps / 8); 0 when unknown.
double pcie_link_gbytes(const topo::PcieLink& link);

// Pure.
std::vector<Finding> judge_pcie(const PcieFacts& facts);
Json to_json(const PcieFacts& facts);

// "GPU 0000:18:00.0 (NVIDIA Corporation GH100[H100 SXM5 80GB])": what a finding calls a device.
std::string describe(const PcieDevice& d);
// bus id -> describe(), for other judges that name devices (the kernel log's XID lines).
std::map<std::string, std::string> device_names(const PcieFacts& facts);
// The NVIDIA GPUs and NVSwitches found (bus ids): the devices an Xid line can be about. nullopt
// without <sys>/bus/pci (the devices are unknown, not absent).
std::optional<std::vector<std::string>> nvidia_gpu_bus_ids(const PcieFacts& facts);

// Parsers, exposed for tests. nullopt when the text is not the kernel's format.
std::optional<AerCounters> parse_aer_counters(const std::string& text);
// At least this many correctable errors since boot are worth a warning on their own (a rise
// during a live run always is): pcie_judge.cc says why.
inline constexpr uint64_t kAerCorrectableWarnTotal = 100;

}  // namespace fabkit::probes
