// EFA facts, all through the system roots (so a --sysroot capture is read as the live system).
#include <cstdlib>
#include <sstream>

#include "common/file_reader.h"
#include "common/root_open.h"
#include "probes/efa/efa_facts.h"
#include "probes/gpudirect/gpudirect_facts.h"  // parse_kernel_version
#include "topo/path_level.h"
#include "topo/pci_bus_id.h"
#include "topo/topology.h"

namespace fabkit::probes {
namespace {

// The GPU with the shortest PCI path to the EFA device (NCCL's order: path level, then hops).
void place_nearest_gpu(const topo::Topology& t, EfaDevice& d) {
  const auto bus = topo::normalize_bus_id(d.bus_id);
  if (!bus) return;
  int node = -1;
  for (size_t i = 0; i < t.pci.size(); ++i)
    if (t.pci[i].bus_id == *bus) node = static_cast<int>(i);
  if (node < 0) return;
  const topo::Gpu* best = nullptr;
  topo::PathLevel best_level = topo::PathLevel::kDis;
  int best_hops = 0;
  for (const auto& g : t.gpus) {
    if (g.pci < 0) continue;
    const auto level = topo::classify_pci_path(t, g.pci, node);
    const int hops = topo::pci_hops(t, g.pci, node);
    if (!best || level < best_level || (level == best_level && hops < best_hops)) {
      best = &g;
      best_level = level;
      best_hops = hops;
    }
  }
  if (!best) return;
  d.nearest_gpu = t.pci[best->pci].bus_id;
  d.nearest_gpu_path = topo::to_string(best_level);
}

}  // namespace

const char* const kEfaSettingNames[] = {"FI_PROVIDER",
                                        "FI_EFA_USE_DEVICE_RDMA",
                                        "FI_EFA_FORK_SAFE",
                                        "FI_EFA_USE_HUGE_PAGE",
                                        "FI_HMEM_CUDA_USE_GDRCOPY",
                                        "FI_EFA_SET_CUDA_SYNC_MEMOPS",
                                        "FI_EFA_IFACE",
                                        "RDMAV_FORK_SAFE",
                                        "IBV_FORK_SAFE",
                                        "NCCL_PROTO",
                                        "NCCL_NET",
                                        nullptr};

void set_efa_settings(EfaFacts& facts, const std::map<std::string, std::string>& variables) {
  for (const char* const* n = kEfaSettingNames; *n; ++n)
    if (auto it = variables.find(*n); it != variables.end()) facts.settings[*n] = it->second;
}

void parse_meminfo_hugepages(const std::string& text, EfaFacts& facts) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, colon);
    std::optional<long long>* slot = key == "HugePages_Total"  ? &facts.hugepages_total
                                     : key == "HugePages_Free" ? &facts.hugepages_free
                                     : key == "Hugepagesize"   ? &facts.hugepage_size_kb
                                                               : nullptr;
    if (!slot) continue;
    const std::string rest = trim(line.substr(colon + 1));
    char* end = nullptr;
    const long long v = std::strtoll(rest.c_str(), &end, 10);
    if (end == rest.c_str() || v < 0) continue;  // malformed: stays unknown, never guessed
    *slot = v;
  }
}

EfaFacts gather_efa(const ProbeContext& ctx, const RdmaFacts& rdma,
                    const topo::Topology* topology) {
  EfaFacts f;
  const auto dmi = ctx.roots.sys / "class" / "dmi" / "id";
  f.sys_vendor = read_line(dmi / "sys_vendor");
  f.product_name = read_line(dmi / "product_name");
  if (f.sys_vendor) f.sys_vendor = trim(*f.sys_vendor);
  if (f.product_name) f.product_name = trim(*f.product_name);
  // Nitro instances name the vendor "Amazon EC2"; Xen-based ones "Xen", and have no EFA.
  f.on_aws = f.sys_vendor && *f.sys_vendor == "Amazon EC2";
  if (f.on_aws && f.product_name) f.instance = find_efa_instance(*f.product_name);
  f.topology_known = topology != nullptr;
  for (const auto& rd : rdma.devices) {
    if (!is_efa(rd)) continue;
    EfaDevice d;
    d.name = rd.name;
    if (!rd.ports.empty()) {
      d.state = rd.ports.front().state;
      d.phys_state = rd.ports.front().phys_state;
    }
    const auto dev = ctx.roots.sys / "class" / "infiniband" / rd.name / "device";
    d.bus_id = symlink_basename(dev).value_or("");
    if (auto n = read_int(dev / "numa_node")) d.numa_node = static_cast<int>(*n);
    if (topology) place_nearest_gpu(*topology, d);
    f.devices.push_back(std::move(d));
  }
  if (auto rel = read_line(ctx.roots.proc / "sys" / "kernel" / "osrelease")) {
    const std::string r = trim(*rel);
    if (!r.empty()) f.kernel_release = r;
  }
  auto meminfo = read_text(ctx.roots.proc / "meminfo", 1 << 16);
  if (ok(meminfo)) parse_meminfo_hugepages(value(meminfo), f);
  return f;
}

std::optional<bool> kernel_copies_dma_pages_on_fork(const EfaFacts& facts) {
  if (!facts.kernel_release) return std::nullopt;
  auto v = parse_kernel_version(*facts.kernel_release);
  if (!v) return std::nullopt;
  return *v >= std::make_pair(5, 13);
}

std::optional<bool> parse_fi_bool(const std::string& value) {
  std::string v;
  for (char c : value) v += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  return std::nullopt;
}

}  // namespace fabkit::probes
