#include "fabric/nccl_runner/gpu_choice.h"

#include <algorithm>
#include <utility>

#include "topo/hwloc_topology.h"

namespace fabkit::fabric {
namespace {

constexpr uint16_t kNvidia = 0x10de;

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

int find_nic(const topo::Topology& t, const std::string& hca, const std::string& ifname) {
  for (size_t i = 0; i < t.nics.size(); ++i) {
    const topo::Nic& n = t.nics[i];
    if (!hca.empty()) {
      bool named = has(n.rdma_devices, hca) ||
                   std::any_of(n.nets.begin(), n.nets.end(), [&](const topo::NcclNet& x) { return x.name == hca; });
      if (named) return static_cast<int>(i);
    } else if (has(n.netdevs, ifname)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

}  // namespace

GpuPick pick_gpu_near_nic(const topo::Topology& t, const std::string& hca, const std::string& ifname) {
  GpuPick p;
  p.nic = hca.empty() ? ifname : hca;
  if (p.nic.empty()) {
    p.reason = "no NIC named (Socket without an interface): nothing to be near";
    return p;
  }
  int nic = find_nic(t, hca, ifname);
  if (nic < 0 || t.nics[nic].pci < 0) {
    p.reason = (hca.empty() ? "interface " : "HCA ") + p.nic +
               " is not a PCI NIC in the topology (virtual interface, or hidden PCI tree)";
    return p;
  }
  int best = -1;
  std::pair<topo::PathLevel, int> best_key{};
  for (size_t g = 0; g < t.gpus.size(); ++g) {
    if (t.gpus[g].vendor_id != kNvidia || t.gpus[g].pci < 0) continue;
    std::pair<topo::PathLevel, int> key{topo::classify_pci_path(t, t.gpus[g].pci, t.nics[nic].pci),
                                        topo::pci_hops(t, t.gpus[g].pci, t.nics[nic].pci)};
    if (best < 0 || key < best_key) {
      best = static_cast<int>(g);
      best_key = key;
      p.equally_near = 0;
    } else if (key == best_key) {
      ++p.equally_near;
    }
  }
  if (best < 0) {
    p.reason = "no NVIDIA GPU in the topology";
    return p;
  }
  p.bus_id = t.gpus[best].bus_id;
  p.level = topo::to_string(best_key.first);
  p.reason = "nearest NVIDIA GPU to " + p.nic + " at " + p.level +
             (p.equally_near ? " (" + std::to_string(p.equally_near) + " other(s) as near; the first taken)" : "");
  return p;
}

GpuPick pick_gpu_here(const std::string& hca, const std::string& ifname) {
  try {
    return pick_gpu_near_nic(topo::load_live_hwloc_topology(), hca, ifname);
  } catch (const std::exception& e) {
    GpuPick p;
    p.nic = hca.empty() ? ifname : hca;
    p.reason = std::string("hwloc could not load this node's topology: ") + e.what();
    return p;
  }
}

Json to_json(const GpuPick& p) {
  auto opt = [](const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); };
  return {{"bus_id", opt(p.bus_id)}, {"nic", opt(p.nic)}, {"path_level", opt(p.level)},
          {"equally_near", p.equally_near}, {"reason", p.reason}};
}

}  // namespace fabkit::fabric
