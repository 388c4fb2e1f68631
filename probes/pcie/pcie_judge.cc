// Findings for PCIe links and AER counters.
//
// The idle rule, how a link trained low is told from one that is only idling:
// - Width below what both ends can (x8 of x16) is a fault (fail). Width is fixed when the link
//   trains; ASPM's L0s/L1 states save power without changing it, and GPUs that lower their speed
//   at idle keep their width: an idle GPU reads "Speed 2.5GT/s (downgraded), Width x16 (ok)"
//   (lspci output in janhq/jan#183) and nvidia-smi shows "PCIe Generation Current: 1" with
//   "Link Width Current: 16x" (the nvidia-smi -a example in zenn.dev/yuyakato/articles/
//   12a19c019b1339). nvidia-smi's field list says of both current generation and width "These
//   may be reduced when the GPU is not in use" (nvidia-smi --help-query-gpu); no datacenter GPU
//   has been seen narrowing its link, so a narrow link is judged a fault, and docs/findings/
//   pcie.md says to re-read under load before replacing parts.
// - Speed below capability on a link that carries a GPU (the GPU's own link, or a switch link
//   with a GPU below) is a warning, not a fault: NVIDIA and AMD drivers lower the link speed of an
//   idle GPU to save power (Gen1 on an idle GPU is normal: "These may be reduced when the GPU is
//   not in use"; Lenovo's support note HT513323 "GPU PCI link speed downgrades to generation 1"),
//   and a passive check cannot wake the GPU. The message says to re-read under load.
// - Speed below capability on any other link (a NIC, an NVSwitch, a switch link with no GPU
//   below) is a fault: those drivers do not change link speed at runtime, so it trained low.
// - A device that can do more than the port above it (a Gen5 GPU under a Gen4 root port) runs at
//   the port's maximum: a platform limit, reported as info, not a fault.
//
// AER: the kernel counts each error "as seen by this device" (Documentation/ABI/testing/
// sysfs-bus-pci-devices-aer_stats): an endpoint's errors are often counted at the port above it,
// so ports are judged like the devices. Fatal: fail. Non-fatal: warn. Correctable errors are
// repaired by the link's replay mechanism and cost only bandwidth; a few since boot are normal,
// so a single read warns from kAerCorrectableWarnTotal (100) on (fabkit's threshold: a link that
// needed 100 replays is marginal), and any rise between the two reads of a live run warns.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "probes/pcie/pcie_facts.h"

namespace fabkit::probes {
namespace {

std::string fmt1(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

std::string strip0x(const std::string& s) { return s.rfind("0x", 0) == 0 ? s.substr(2) : s; }

const PcieDevice* find(const PcieFacts& f, const std::optional<std::string>& bus_id) {
  if (!bus_id) return nullptr;
  for (const auto& d : f.devices)
    if (d.bus_id == *bus_id) return &d;
  return nullptr;
}

bool carries_gpu(const PcieFacts& f, const PcieDevice& d) {
  if (d.role == PciRole::kGpu) return true;
  for (const auto& b : d.below)
    if (const auto* x = find(f, b); x && x->role == PciRole::kGpu) return true;
  return false;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string below_list(const PcieFacts& f, const PcieDevice& d) {
  std::vector<std::string> out;
  for (const auto& b : d.below)
    if (const auto* x = find(f, b)) out.push_back(describe(*x));
  return joined(out);
}

// "same link as the other functions of this device" (a dual-port NIC's .0 and .1).
std::string link_key(const PcieDevice& d) {
  if (!d.parent) return d.bus_id;
  return *d.parent + "/" + d.bus_id.substr(0, d.bus_id.rfind('.'));
}

std::string rate_text(const topo::PcieLink& l) {
  double g = pcie_link_gbytes(l);
  return g > 0 ? fmt1(g) + " GB/s" : "? GB/s";
}

std::string nonzero_names(const AerCounters& c) {
  std::string s;
  for (const auto& [name, n] : c.by_name)
    if (n > 0) s += (s.empty() ? "" : ", ") + name + " " + std::to_string(n);
  return s.empty() ? "no bit named" : s;
}

std::string lspci_check(const std::string& bus_id) {
  return "lspci -vv -s " + bus_id + " | grep -E 'LnkCap:|LnkSta:'";
}

void judge_link(const PcieFacts& f, const PcieDevice& d, const PcieLinkState& st,
                const std::vector<std::string>& siblings, std::vector<Finding>& out) {
  const PcieDevice* parent = find(f, d.parent);
  const std::string who = describe(d);
  const std::string same = siblings.empty() ? "" : " (the same link as " + joined(siblings) + ")";
  const std::string under =
      d.role == PciRole::kBridge ? ". It limits everything below it: " + below_list(f, d) : "";
  if (st.unreadable) {
    out.push_back(warn("pcie.link_state_unknown", d.bus_id,
                       who + same + ": the link reads '" + st.trained_text +
                           "': the link is down or the device does not answer config reads "
                           "(a GPU that fell off the bus reads like this)" +
                           under,
                       lspci_check(d.bus_id) + "; dmesg | grep -i -E '" + d.bus_id +
                           "|aer|xid'; a device that does not answer needs the node drained "
                           "and power-cycled"));
    return;
  }
  const auto& dm = st.device_max;
  const auto& pm = st.parent_max;
  if (parent && ((dm.generation && pm.generation && *dm.generation > *pm.generation) ||
                 (dm.width && pm.width && *dm.width > *pm.width)))
    out.push_back(info("pcie.platform_limit", d.bus_id,
                       who + " can run " + topo::to_string(dm) + " but the port above it, " +
                           describe(*parent) + ", supports " + topo::to_string(pm) +
                           ": the link's ceiling is " + topo::to_string(st.capable) + " (" +
                           rate_text(st.capable) +
                           " per direction). A platform limit (slot, riser or root port), not a "
                           "fault",
                       "move the card to a slot of its generation and width if the workload "
                       "needs the bandwidth"));
  const auto& t = st.trained;
  const auto& c = st.capable;
  const std::string status = link_status(f, d);
  if (status == "ok") return;
  const bool width_low = status == "width_degraded";
  const bool speed_low = t.generation && c.generation && *t.generation < *c.generation;
  const double have = pcie_link_gbytes(t), could = pcie_link_gbytes(c);
  std::string figures = " per direction";
  if (have > 0 && could > 0)
    figures = " per direction (" + std::to_string(static_cast<int>(100 * have / could + 0.5)) +
              "%; " + fmt1(could - have) + " GB/s lost)";
  std::string msg = who + same + " runs at " + topo::to_string(t) + "; the link can run " +
                    topo::to_string(c) + ": " + rate_text(t) + " of " + rate_text(c) + figures +
                    under;
  const bool gpu_link = carries_gpu(f, d);
  const std::string idle =
      "A GPU lowers its link speed when idle to save power (nvidia-smi: the current generation "
      "'may be reduced when the GPU is not in use')";
  // A degraded link warns and never drains (issue #18's severities: fail is for a part that is
  // broken or about to be, warn for one that still works slower): the node runs every job, at less
  // bandwidth on this path. The fix says to drain it for the repair, which needs a power cycle.
  if (width_low) {
    if (speed_low && gpu_link) msg += ". The speed may be idle power saving; the width is not";
    out.push_back(warn("pcie.link_width_degraded", d.bus_id, msg,
                       "the link trained " + std::to_string(*t.width) + " of " +
                           std::to_string(*c.width) +
                           " lanes: a card, riser or cable not seated, a damaged lane, or a "
                           "BIOS slot/bifurcation setting; at the next maintenance (drain the node "
                           "first), reseat the card and its riser or cable, check the slot setting "
                           "in the BIOS, and "
                           "power-cycle to retrain; " +
                           lspci_check(d.bus_id) + " shows '(downgraded)'"));
  } else if (status == "speed_low_gpu") {
    out.push_back(warn("pcie.link_speed_low_gpu", d.bus_id, msg + ". " + idle,
                       "read it again while a job runs: nvidia-smi -q -d PCI (GPU Link Info, "
                       "PCIe Generation Current) or fabcheck node during a job; if it stays "
                       "below Gen" +
                           std::to_string(*c.generation) +
                           " under load, reseat the card and check the BIOS PCIe speed setting"));
  } else {
    out.push_back(warn("pcie.link_speed_degraded", d.bus_id, msg,
                       "the link trained at Gen" + std::to_string(*t.generation) + " of Gen" +
                           std::to_string(*c.generation) +
                           ": a marginal riser, cable or retimer, or a BIOS speed limit; at the "
                           "next maintenance (drain the node first), reseat the card and riser, "
                           "check the BIOS PCIe speed "
                           "setting, and power-cycle to retrain; " +
                           lspci_check(d.bus_id)));
  }
}

void judge_aer(const PcieFacts& f, const PcieDevice& d, std::vector<Finding>& out) {
  std::string who = describe(d);
  if (d.role == PciRole::kBridge && !d.below.empty())
    who +=
        " (above " + below_list(f, d) + "; a port also counts the errors of the device below it)";
  const std::string look = "dmesg | grep -i -E 'aer|pcie bus error' (which device, when)";
  if (d.aer_fatal && d.aer_fatal->total.value_or(0) > 0)
    out.push_back(fail("pcie.aer_fatal", d.bus_id,
                       who + ": " + std::to_string(*d.aer_fatal->total) +
                           " fatal uncorrectable PCIe errors since boot (" +
                           nonzero_names(*d.aer_fatal) +
                           "); the kernel resets the link on each, and the device below usually "
                           "drops off (a GPU then logs Xid 79)",
                       look + "; drain the node, reseat the card, riser or cable, update the "
                              "BIOS and device firmware; replace the part if it recurs"));
  if (d.aer_nonfatal && d.aer_nonfatal->total.value_or(0) > 0)
    out.push_back(warn("pcie.aer_nonfatal", d.bus_id,
                       who + ": " + std::to_string(*d.aer_nonfatal->total) +
                           " non-fatal uncorrectable PCIe errors since boot (" +
                           nonzero_names(*d.aer_nonfatal) +
                           "): transactions were lost (completion timeouts, poisoned or "
                           "unsupported requests) and the driver had to recover",
                       look + "; a job running at the time may have failed; reseat the card if "
                              "they recur"));
  if (!d.aer_correctable || !d.aer_correctable->total) return;
  const uint64_t n = *d.aer_correctable->total;
  const std::string names = nonzero_names(*d.aer_correctable);
  const std::string fix =
      "replays cost bandwidth and precede uncorrectable errors: reseat the "
      "card, riser or cable at the next maintenance; " +
      look;
  if (d.aer_correctable_rise && *d.aer_correctable_rise > 0)
    out.push_back(warn("pcie.aer_correctable_rising", d.bus_id,
                       who + ": correctable PCIe errors rose by " +
                           std::to_string(*d.aer_correctable_rise) + " in " +
                           std::to_string(f.aer_interval_ms) + " ms (" + std::to_string(n) +
                           " since boot: " + names + "): the link is replaying now",
                       fix));
  else if (n >= kAerCorrectableWarnTotal)
    out.push_back(warn("pcie.aer_correctable_high", d.bus_id,
                       who + ": " + std::to_string(n) + " correctable PCIe errors since boot (" +
                           names + "), at or above fabcheck's threshold of " +
                           std::to_string(kAerCorrectableWarnTotal) + ": a marginal link",
                       fix));
  else if (n > 0)
    out.push_back(info("pcie.aer_correctable", d.bus_id,
                       who + ": " + std::to_string(n) + " correctable PCIe errors since boot (" +
                           names + "); below fabcheck's threshold of " +
                           std::to_string(kAerCorrectableWarnTotal) +
                           (f.aer_interval_ms > 0 ? ", none during the check" : "")));
}

}  // namespace

const char* to_string(PciRole r) {
  switch (r) {
    case PciRole::kGpu:
      return "gpu";
    case PciRole::kNic:
      return "nic";
    case PciRole::kNvSwitch:
      return "nvswitch";
    case PciRole::kBridge:
      return "bridge";
  }
  return "bridge";
}

const char* to_string(PciPort p) {
  switch (p) {
    case PciPort::kEndpoint:
      return "endpoint";
    case PciPort::kRootPort:
      return "root_port";
    case PciPort::kUpstreamPort:
      return "upstream_port";
    case PciPort::kDownstreamPort:
      return "downstream_port";
  }
  return "endpoint";
}

std::string describe(const PcieDevice& d) {
  std::string word;
  switch (d.role) {
    case PciRole::kGpu:
      word = "GPU";
      break;
    case PciRole::kNic:
      word = "NIC";
      break;
    case PciRole::kNvSwitch:
      word = "NVSwitch";
      break;
    case PciRole::kBridge:
      word = d.port == PciPort::kRootPort         ? "root port"
             : d.port == PciPort::kUpstreamPort   ? "switch upstream port"
             : d.port == PciPort::kDownstreamPort ? "switch downstream port"
                                                  : "bridge";
  }
  std::string what =
      d.name.empty() ? "[" + strip0x(d.vendor_id) + ":" + strip0x(d.device_id) + "]" : d.name;
  if (d.driver) what += ", driver " + *d.driver;
  return word + " " + d.bus_id + " (" + what + ")";
}

std::map<std::string, std::string> device_names(const PcieFacts& f) {
  std::map<std::string, std::string> out;
  for (const auto& d : f.devices) out[d.bus_id] = describe(d);
  return out;
}

std::optional<std::vector<std::string>> nvidia_gpu_bus_ids(const PcieFacts& f) {
  if (!f.pci_bus_present) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& d : f.devices)
    if ((d.role == PciRole::kGpu && std::strtoul(d.vendor_id.c_str(), nullptr, 16) == 0x10de) ||
        d.role == PciRole::kNvSwitch)
      out.push_back(d.bus_id);
  return out;
}

double pcie_link_gbytes(const topo::PcieLink& l) {
  if (!l.generation || !l.width) return 0;
  return topo::pcie_data_rate_gbps(*l.generation, *l.width) / 8;
}

std::optional<PcieLinkState> link_state(const PcieFacts& f, const PcieDevice& d) {
  if (d.port != PciPort::kEndpoint && d.port != PciPort::kUpstreamPort) return std::nullopt;
  const PcieDevice* p = find(f, d.parent);
  PcieLinkState st;
  st.device_max = d.max;
  if (p) st.parent_max = p->max;
  const bool own = d.current_speed_text || d.current_width_text;
  const PcieDevice& cur = own || !p ? d : *p;
  st.has_link_files = own || d.max_speed_text || d.max_width_text ||
                      (p && (p->current_speed_text || p->current_width_text || p->max_speed_text));
  st.trained = cur.current;
  st.unreadable = (cur.current_speed_text && !cur.current.generation) ||
                  (cur.current_width_text && !cur.current.width);
  st.trained_text =
      cur.current_speed_text.value_or("?") + " x" + cur.current_width_text.value_or("?");
  auto lower = [](std::optional<int> a, std::optional<int> b) -> std::optional<int> {
    if (a && b) return std::min(*a, *b);
    return a ? a : b;
  };
  st.capable.generation = lower(d.max.generation, p ? p->max.generation : std::nullopt);
  st.capable.width = lower(d.max.width, p ? p->max.width : std::nullopt);
  return st;
}

std::string link_status(const PcieFacts& f, const PcieDevice& d) {
  auto st = link_state(f, d);
  if (!st) return "";
  if (!st->has_link_files) return "no_link_info";
  if (st->unreadable) return "unknown";
  const auto& t = st->trained;
  const auto& c = st->capable;
  if (t.width && c.width && *t.width < *c.width) return "width_degraded";
  if (t.generation && c.generation && *t.generation < *c.generation)
    return carries_gpu(f, d) ? "speed_low_gpu" : "speed_degraded";
  return "ok";
}

std::vector<Finding> judge_pcie(const PcieFacts& f) {
  std::vector<Finding> out;
  for (const auto& e : f.errors)
    out.push_back(warn("pcie.gather_error", e.object, "could not read PCIe facts: " + e.to_string(),
                       "run fabcheck where /sys/bus/pci is readable (not a container that hides "
                       "the PCI tree), or capture sys/bus/pci and sys/devices with the tree"));
  if (!f.pci_bus_present) {
    out.push_back(info("pcie.not_captured", "node",
                       "no bus/pci/devices under the sys root: the PCIe links are unknown (a "
                       "--sysroot capture without the PCI tree, or a container without /sys)",
                       "capture /sys/bus/pci and /sys/devices with the tree, or run on the node"));
    return out;
  }
  int counts[4] = {0, 0, 0, 0};
  std::map<std::string, std::vector<std::string>> by_link;
  for (const auto& d : f.devices) {
    counts[static_cast<int>(d.role)]++;
    if (d.port == PciPort::kEndpoint || d.port == PciPort::kUpstreamPort)
      by_link[link_key(d)].push_back(d.bus_id);
  }
  const int selected = counts[0] + counts[1] + counts[2];
  if (selected == 0) {
    out.push_back(info("pcie.no_devices", "node",
                       "no GPU, NIC or NVSwitch on the PCI bus: no link to judge"));
    return out;
  }
  std::vector<std::string> no_link;
  int links = 0, at_capability = 0;
  std::set<std::string> done;
  for (const auto& d : f.devices) {
    auto st = link_state(f, d);
    if (!st) continue;
    if (!st->has_link_files) {
      if (d.role != PciRole::kBridge) no_link.push_back(describe(d));
      continue;
    }
    const std::string key = link_key(d);
    if (!done.insert(key).second) continue;
    std::vector<std::string> siblings;
    for (const auto& b : by_link[key])
      if (b != d.bus_id) siblings.push_back(b);
    const size_t before = out.size();
    judge_link(f, d, *st, siblings, out);
    ++links;
    bool degraded = false;
    for (size_t i = before; i < out.size(); ++i)
      degraded = degraded || out[i].severity != Severity::kInfo;
    at_capability += degraded ? 0 : 1;
  }
  for (const auto& d : f.devices) judge_aer(f, d, out);
  if (!no_link.empty())
    out.push_back(info("pcie.no_link_info", "node",
                       std::to_string(no_link.size()) +
                           " device(s) without PCIe link attributes (conventional PCI or a "
                           "virtual device, e.g. in a VM): their links cannot be judged: " +
                           joined(no_link)));
  out.push_back(info("pcie.checked", "node",
                     std::to_string(counts[0]) + " GPU(s), " + std::to_string(counts[1]) +
                         " NIC(s), " + std::to_string(counts[2]) + " NVSwitch(es) and " +
                         std::to_string(counts[3]) + " bridge(s) above them; " +
                         std::to_string(at_capability) + " of " + std::to_string(links) +
                         " link(s) at what both ends can do"));
  return out;
}

}  // namespace fabkit::probes
