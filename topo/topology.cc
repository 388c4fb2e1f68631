#include "topo/topology.h"

#include <algorithm>
#include <cstdlib>
#include <tuple>

namespace fabkit::topo {
namespace {

constexpr uint16_t kVendorNvidia = 0x10de;
constexpr uint16_t kVendorAmd = 0x1002;
constexpr uint32_t kClassVga = 0x0300;
constexpr uint32_t kClass3d = 0x0302;
constexpr uint32_t kClassDisplayOther = 0x0380;   // AMD Instinct MI100/MI200
constexpr uint32_t kClassAccelerator = 0x1200;    // AMD Instinct MI300
constexpr uint32_t kClassInfinibandNet = 0x0207;  // ConnectX in IB mode
constexpr uint32_t kClassInfinibandBus = 0x0c06;  // ConnectX-2/3 (mlx4) report the serial-bus class
// ATI ES1000 (1002:515e): the onboard VGA of many HP/Dell servers, driven by the BMC. Its class is
// VGA and its vendor AMD, but it is not a compute GPU (hwloc's 24em64t fixture has one).
constexpr uint16_t kAmdEs1000 = 0x515e;

std::vector<int> chain_to_root(const Topology& t, int n) {
  std::vector<int> chain;
  // The depth bound guards against a cycle a buggy source could create; parsers reject deeper
  // trees.
  while (n >= 0 && n < static_cast<int>(t.pci.size()) && chain.size() <= t.pci.size()) {
    chain.push_back(n);
    n = t.pci[n].parent;
  }
  return chain;
}

// The lowest common ancestor of a and b, and the nodes strictly between them.
struct PathInfo {
  int lca = -1;
  std::vector<int> between;
};

PathInfo path_info(const Topology& t, int a, int b) {
  PathInfo p;
  auto ca = chain_to_root(t, a);
  auto cb = chain_to_root(t, b);
  for (size_t i = 0; i < ca.size() && p.lca < 0; ++i) {
    auto it = std::find(cb.begin(), cb.end(), ca[i]);
    if (it == cb.end()) continue;
    p.lca = ca[i];
    for (size_t k = 1; k < i; ++k) p.between.push_back(ca[k]);
    for (auto k = cb.begin() + 1; k < it; ++k) p.between.push_back(*k);
    if (p.lca != a && p.lca != b) p.between.push_back(p.lca);
  }
  if (p.lca < 0) {  // different roots: everything but the endpoints is on the path
    for (size_t k = 1; k < ca.size(); ++k) p.between.push_back(ca[k]);
    for (size_t k = 1; k < cb.size(); ++k) p.between.push_back(cb[k]);
  }
  return p;
}

}  // namespace

const char* to_string(PciKind k) {
  switch (k) {
    case PciKind::kRoot:
      return "root";
    case PciKind::kBridge:
      return "bridge";
    case PciKind::kDevice:
      return "device";
  }
  return "unknown";
}

bool NcclNet::rdma() const {
  if (gdr == true || guid.empty()) return true;  // GPUDirect, or no guid to tell: as NCCL lists it
  // A socket device index is small; any real node GUID carries a 24-bit vendor OUI at the top.
  return std::strtoull(guid.c_str(), nullptr, 16) > 0xffff;
}

bool Nic::rdma_capable() const {
  return std::any_of(nets.begin(), nets.end(), [](const NcclNet& n) { return n.rdma(); }) ||
         !rdma_devices.empty() || class_id == kClassInfinibandNet || class_id == kClassInfinibandBus;
}

bool is_gpu_pci(uint16_t vendor_id, uint16_t device_id, uint32_t class_id) {
  if (vendor_id == kVendorNvidia) return class_id == kClassVga || class_id == kClass3d;
  if (vendor_id == kVendorAmd) {
    if (device_id == kAmdEs1000) return false;
    return class_id == kClassVga || class_id == kClass3d || class_id == kClassDisplayOther ||
           class_id == kClassAccelerator;
  }
  return false;
}

int numa_of(const Topology& t, int pci) {
  for (int n : chain_to_root(t, pci))
    if (t.pci[n].numa_node >= 0) return t.pci[n].numa_node;
  return -1;
}

int pci_hops(const Topology& t, int a, int b) {
  return static_cast<int>(path_info(t, a, b).between.size());
}

std::vector<int> bridges_between(const Topology& t, int a, int b) {
  std::vector<int> out;
  for (int n : path_info(t, a, b).between)
    if (t.pci[n].kind == PciKind::kBridge) out.push_back(n);
  return out;
}

PathLevel classify_pci_path(const Topology& t, int a, int b) {
  const int n = static_cast<int>(t.pci.size());
  if (a < 0 || b < 0 || a >= n || b >= n) return PathLevel::kDis;
  if (a == b) return PathLevel::kLoc;
  PathInfo p = path_info(t, a, b);
  if (p.lca >= 0 && t.pci[p.lca].kind != PciKind::kRoot) {
    int bridges = 0;
    for (int k : p.between) bridges += t.pci[k].kind == PciKind::kBridge ? 1 : 0;
    return bridges <= 1 ? PathLevel::kPix : PathLevel::kPxb;
  }
  if (p.lca >= 0) return PathLevel::kPhb;  // same root complex
  // Two root complexes: NCCL joins host bridges of one NUMA node at its CPU node (PHB) and
  // different NUMA nodes over the SMP interconnect (SYS). Unknown NUMA cannot prove locality.
  int na = numa_of(t, a), nb = numa_of(t, b);
  return (na >= 0 && na == nb) ? PathLevel::kPhb : PathLevel::kSys;
}

NicChoice nearest_nic(const Topology& t, const Gpu& gpu) {
  NicChoice best;
  bool any_rdma =
      std::any_of(t.nics.begin(), t.nics.end(), [](const Nic& n) { return n.rdma_capable(); });
  std::tuple<int, int> best_key{1 << 30, 1 << 30};
  for (size_t i = 0; i < t.nics.size(); ++i) {
    const Nic& nic = t.nics[i];
    if (any_rdma && !nic.rdma_capable()) continue;
    PathLevel level = classify_pci_path(t, gpu.pci, nic.pci);
    std::tuple<int, int> key{static_cast<int>(level), pci_hops(t, gpu.pci, nic.pci)};
    if (key < best_key) {
      best_key = key;
      best.nic = static_cast<int>(i);
      best.level = level;
      best.equally_near.clear();
    } else if (key == best_key) {
      best.equally_near.push_back(static_cast<int>(i));
    }
  }
  return best;
}

}  // namespace fabkit::topo
