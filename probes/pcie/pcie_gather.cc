// The sysfs walk: which devices to look at (by class and vendor), the bridges above each (from
// the path the /sys/bus/pci/devices symlink points to), and what each one's link and AER files say.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <set>
#include <thread>

#include "common/file_reader.h"
#include "common/root_open.h"
#include "common/utf8_text.h"
#include "probes/pcie/pci_ids.h"
#include "probes/pcie/pcie_facts.h"
#include "topo/topology.h"

namespace fabkit::probes {
namespace fs = std::filesystem;
namespace {

constexpr uint32_t kVendorNvidia = 0x10de;

std::optional<uint32_t> hex_attr(const fs::path& p) {
  auto v = read_int(p);  // "0x10de": base 0 reads the 0x prefix
  if (!v || *v < 0 || *v > 0xffffffffLL) return std::nullopt;
  return static_cast<uint32_t>(*v);
}

// The devices this probe is about. GPUs as the locality probe counts them (topo::is_gpu_pci:
// NVIDIA display/3D, AMD display/3D/accelerator, not the BMC's ES1000 VGA). NICs: PCI base class
// 0x02 (network), and 0x0c06 (InfiniBand, what ConnectX-2/3 report). NVSwitches: NVIDIA with
// class 0x0680 ("bridge, other"). PCI Code and ID Assignment specification for the classes.
std::optional<PciRole> selected_role(uint32_t cls, uint32_t vendor, uint32_t device) {
  if (topo::is_gpu_pci(static_cast<uint16_t>(vendor), static_cast<uint16_t>(device), cls >> 8))
    return PciRole::kGpu;
  if ((cls >> 16) == 0x02 || (cls >> 8) == 0x0c06) return PciRole::kNic;
  if ((cls >> 8) == 0x0680 && vendor == kVendorNvidia) return PciRole::kNvSwitch;
  return std::nullopt;
}

bool is_pci_bridge(std::optional<uint32_t> cls) { return cls && (*cls >> 8) == 0x0604; }

bool is_host_bridge_dir(const std::string& name) { return starts_with(name, "pci"); }

// A device directory's name: "dddd:bb:dd.f". Not topo::parse_pci_address, which stops at domain
// 0xffff: Intel VMD puts its devices in domains from 0x10000 ("10000:e1:00.0").
bool is_bdf_name(const std::string& s) {
  const size_t n = s.size();
  if (n < 12 || s[n - 2] != '.' || s[n - 5] != ':' || s[n - 8] != ':') return false;
  for (size_t i = 0; i < n; ++i)
    if (i != n - 2 && i != n - 5 && i != n - 8 && !std::isxdigit(static_cast<unsigned char>(s[i])))
      return false;
  return true;
}

// The components of a device's real sysfs path, from the symlink in bus/pci/devices; nullopt when
// it is not a symlink (a tree copied without links) or points outside <sys>/devices. An absolute
// link (`/sys/devices/...`, as some capture tools write them) names the path on the captured
// machine: it is read against the root <sys> hangs off, as the reads through it resolve.
std::optional<std::vector<std::string>> device_path(const fs::path& sys, const std::string& bdf) {
  auto text = read_link(sys / "bus/pci/devices" / bdf);
  if (!text) return std::nullopt;
  const fs::path target(*text);
  fs::path real = (target.is_absolute() ? sys.parent_path() / target.relative_path()
                                        : sys / "bus/pci/devices" / target)
                      .lexically_normal();
  fs::path rel = real.lexically_relative((sys / "devices").lexically_normal());
  if (rel.empty() || *rel.begin() == "..") return std::nullopt;
  std::vector<std::string> parts;
  for (const auto& c : rel) parts.push_back(c.string());
  if (parts.empty() || parts.back() != bdf) return std::nullopt;
  return parts;
}

std::optional<std::string> optional_line(const fs::path& p, std::vector<SysError>& errors) {
  auto t = read_text(p, 4096);
  if (!ok(t)) {
    if (error(t).err != ENOENT) errors.push_back(error(t));
    return std::nullopt;
  }
  const std::string& s = value(t);
  // Under --sysroot these are the user's files: any bytes, and they are echoed into the JSON.
  return utf8_clean(trim(s.substr(0, s.find('\n'))));
}

std::optional<AerCounters> read_aer(const fs::path& p, std::vector<SysError>& errors) {
  auto t = read_text(p, 8192);
  if (!ok(t)) {
    if (error(t).err != ENOENT) errors.push_back(error(t));
    return std::nullopt;
  }
  auto c = parse_aer_counters(value(t));
  if (!c)
    errors.push_back(SysError{
        "parse", EINVAL, p.string() + ": not the kernel's 'NAME count' lines ending in TOTAL_"});
  return c;
}

void read_attributes(const fs::path& dir, PcieDevice& d, std::vector<SysError>& errors) {
  d.vendor_id = optional_line(dir / "vendor", errors).value_or("");
  d.device_id = optional_line(dir / "device", errors).value_or("");
  d.class_code = optional_line(dir / "class", errors).value_or("");
  d.driver = symlink_basename(dir / "driver");
  if (d.driver) d.driver = utf8_clean(*d.driver);
  d.current_speed_text = optional_line(dir / "current_link_speed", errors);
  d.max_speed_text = optional_line(dir / "max_link_speed", errors);
  d.current_width_text = optional_line(dir / "current_link_width", errors);
  d.max_width_text = optional_line(dir / "max_link_width", errors);
  if (d.current_speed_text)
    d.current.generation = topo::pcie_generation_from_speed(*d.current_speed_text);
  if (d.max_speed_text) d.max.generation = topo::pcie_generation_from_speed(*d.max_speed_text);
  if (d.current_width_text) d.current.width = topo::pcie_width_from_text(*d.current_width_text);
  if (d.max_width_text) d.max.width = topo::pcie_width_from_text(*d.max_width_text);
  d.aer_correctable = read_aer(dir / "aer_dev_correctable", errors);
  d.aer_nonfatal = read_aer(dir / "aer_dev_nonfatal", errors);
  d.aer_fatal = read_aer(dir / "aer_dev_fatal", errors);
}

std::optional<uint64_t> total(const std::optional<AerCounters>& c) {
  return c ? c->total : std::nullopt;
}

}  // namespace

std::optional<AerCounters> parse_aer_counters(const std::string& text) {
  AerCounters c;
  for (const auto& raw : split(text, '\n')) {
    std::string line = trim(raw);
    if (line.empty()) continue;
    size_t sp = line.rfind(' ');
    if (sp == std::string::npos || sp == 0) return std::nullopt;
    std::string name = utf8_clean(trim(line.substr(0, sp))), count = line.substr(sp + 1);
    if (count.empty() || count.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    errno = 0;
    uint64_t n = std::strtoull(count.c_str(), nullptr, 10);
    if (errno == ERANGE) return std::nullopt;
    if (starts_with(name, "TOTAL_"))
      c.total = n;
    else
      c.by_name[name] = n;
  }
  if (!c.total) return std::nullopt;  // every kernel since 4.19 ends the list with TOTAL_ERR_*
  return c;
}

PcieFacts gather_pcie(const ProbeContext& ctx) {
  PcieFacts f;
  const fs::path sys = ctx.roots.sys;
  const fs::path bus = sys / "bus/pci/devices";
  if (!path_is_directory(bus)) return f;
  f.pci_bus_present = true;

  std::map<std::string, PcieDevice> found;  // bus id -> device, selected and bridges
  std::map<std::string, fs::path> dirs;     // bus id -> its directory
  for (const auto& bdf : list_dir(bus)) {
    if (!is_bdf_name(bdf)) continue;
    const fs::path dir = bus / bdf;
    auto cls = hex_attr(dir / "class");
    auto vendor = hex_attr(dir / "vendor");
    auto device = hex_attr(dir / "device");
    if (!cls || !vendor) continue;
    auto role = selected_role(*cls, *vendor, device.value_or(0));
    // A virtual function shares its physical function's link and reads "Unknown" / 0 itself.
    if (!role || path_exists(dir / "physfn")) continue;
    PcieDevice d;
    d.bus_id = bdf;
    d.role = *role;
    auto parts = device_path(sys, bdf);
    if (!parts) {
      d.sysfs_path = "bus/pci/devices/" + bdf;
      dirs[bdf] = dir;
      found[bdf] = d;
      continue;
    }
    // Walk the path from the host bridge the device hangs off (the last "pci..." component: a
    // VMD controller opens a second domain below another device) down to the device, adding the
    // bridges and deciding each one's side of its link.
    size_t first = 0;
    for (size_t i = 0; i < parts->size(); ++i)
      if (is_host_bridge_dir((*parts)[i])) first = i + 1;
    fs::path walked = sys / "devices";
    std::string rel = "devices";
    for (size_t i = 0; i < first; ++i) {
      walked /= (*parts)[i];
      rel += "/" + (*parts)[i];
    }
    std::optional<std::string> prev_bdf;
    PciPort prev_port = PciPort::kEndpoint;
    for (size_t i = first; i < parts->size(); ++i) {
      const std::string& part = (*parts)[i];
      walked /= part;
      rel += "/" + part;
      if (!is_bdf_name(part)) continue;
      const bool bridge = part != bdf && is_pci_bridge(hex_attr(walked / "class"));
      PciPort port = PciPort::kEndpoint;
      if (!prev_bdf)
        port = bridge ? PciPort::kRootPort : PciPort::kEndpoint;
      else if (prev_port == PciPort::kRootPort || prev_port == PciPort::kDownstreamPort)
        port = bridge ? PciPort::kUpstreamPort : PciPort::kEndpoint;
      else if (prev_port == PciPort::kUpstreamPort)
        port = bridge ? PciPort::kDownstreamPort : PciPort::kEndpoint;
      if (part == bdf) {
        d.port = port;
        d.parent = prev_bdf;
        d.sysfs_path = rel;
        break;
      }
      if (!found.count(part)) {
        PcieDevice b;
        b.bus_id = part;
        b.role = PciRole::kBridge;
        b.port = port;
        b.parent = prev_bdf;
        b.sysfs_path = rel;
        found[part] = b;
        dirs[part] = walked;
      }
      found[part].below.push_back(bdf);
      prev_bdf = part;
      prev_port = port;
    }
    dirs[bdf] = walked;
    found[bdf] = d;
  }

  PciIdNames names;
  if (!found.empty()) {
    names = PciIdNames::load(ctx.roots.root);
    f.names_source = names.source();
  }
  for (auto& [bdf, d] : found) {
    read_attributes(dirs[bdf], d, f.errors);
    d.name = names.name(d.vendor_id, d.device_id);
    std::sort(d.below.begin(), d.below.end());
    d.below.erase(std::unique(d.below.begin(), d.below.end()), d.below.end());
    f.devices.push_back(std::move(d));
  }
  f.aer_first_read = std::chrono::steady_clock::now();
  return f;
}

void reread_pcie_aer(const ProbeContext& ctx, PcieFacts& f, int min_interval_ms) {
  if (!ctx.roots.live || min_interval_ms <= 0) return;
  bool any = false;
  for (const auto& d : f.devices) any = any || d.aer_correctable || d.aer_nonfatal || d.aer_fatal;
  if (!any) return;
  const auto start = f.aer_first_read;
  const auto wanted = start + std::chrono::milliseconds(min_interval_ms);
  if (std::chrono::steady_clock::now() < wanted) std::this_thread::sleep_until(wanted);
  f.aer_interval_ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::steady_clock::now() - start)
                                           .count());
  const fs::path sys = ctx.roots.sys;
  std::vector<SysError> ignored;  // a file that vanished in between: no rise to report
  for (auto& d : f.devices) {
    const fs::path dir = sys / d.sysfs_path;
    auto rise = [&](const std::optional<AerCounters>& before, const char* file,
                    std::optional<uint64_t>& out) {
      if (!total(before)) return;
      auto after = read_aer(dir / file, ignored);
      // A total that went down means the counters were reset (device removed and re-added).
      if (total(after) && *total(after) >= *total(before)) out = *total(after) - *total(before);
    };
    rise(d.aer_correctable, "aer_dev_correctable", d.aer_correctable_rise);
    rise(d.aer_nonfatal, "aer_dev_nonfatal", d.aer_nonfatal_rise);
    rise(d.aer_fatal, "aer_dev_fatal", d.aer_fatal_rise);
  }
}

}  // namespace fabkit::probes
