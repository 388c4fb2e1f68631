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

// The path between a and b: its lowest common ancestor, and the nodes strictly between a and b
// (counted, and how many of them are bridges). Everything but the endpoints when their roots
// differ.
struct PathStats {
  int lca = -1;
  int between = 0;
  int bridges = 0;
};

// ca is a's chain to its root (chain_to_root), computed once per GPU: nearest_nic pairs one GPU
// with every NIC, and building both chains per pair (heap allocations, a quadratic search) made
// that the bulk of a 4000 x 4000 file's 25 s (issue #36). O(depth of a + depth of b), no
// allocation.
PathStats path_stats(const Topology& t, const std::vector<int>& ca, int b) {
  const int n = static_cast<int>(t.pci.size());
  auto is_bridge = [&](int k) { return t.pci[k].kind == PciKind::kBridge ? 1 : 0; };
  auto valid = [&](int k) { return k >= 0 && k < n; };
  int len_b = 0;
  for (int k = b; valid(k) && len_b <= n; k = t.pci[k].parent) ++len_b;
  const int len_a = static_cast<int>(ca.size());
  PathStats s;
  // Nodes at the same distance from the root are compared pairwise, from that depth up: a common
  // ancestor sits at the same index from the end of both chains.
  int i = std::max(0, len_a - len_b);  // index into ca
  int j = 0;                           // index into b's chain
  int k = b;
  for (; j < len_b - len_a; ++j, k = t.pci[k].parent)
    if (j > 0) ++s.between, s.bridges += is_bridge(k);
  for (; i < len_a && valid(k); ++i, ++j, k = t.pci[k].parent) {
    if (ca[i] == k) {
      s.lca = k;
      break;
    }
    if (j > 0) ++s.between, s.bridges += is_bridge(k);
  }
  const int a_end = s.lca >= 0 ? i : len_a;  // ca[1 .. a_end) lies between
  for (int x = 1; x < a_end; ++x) ++s.between, s.bridges += is_bridge(ca[x]);
  if (s.lca >= 0 && len_a > 0 && s.lca != ca[0] && s.lca != b)
    ++s.between, s.bridges += is_bridge(s.lca);
  return s;
}

PathLevel classify(const Topology& t, int a, const PathStats& p, int b) {
  if (a == b) return PathLevel::kLoc;
  if (p.lca >= 0 && t.pci[p.lca].kind != PciKind::kRoot)
    return p.bridges <= 1 ? PathLevel::kPix : PathLevel::kPxb;
  if (p.lca >= 0) return PathLevel::kPhb;  // same root complex
  // Two root complexes: NCCL joins host bridges of one NUMA node at its CPU node (PHB) and
  // different NUMA nodes over the SMP interconnect (SYS). Unknown NUMA cannot prove locality.
  int na = numa_of(t, a), nb = numa_of(t, b);
  return (na >= 0 && na == nb) ? PathLevel::kPhb : PathLevel::kSys;
}

bool in_range(const Topology& t, int a) { return a >= 0 && a < static_cast<int>(t.pci.size()); }

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
  for (size_t steps = 0; in_range(t, pci) && steps <= t.pci.size(); ++steps) {
    if (t.pci[pci].numa_node >= 0) return t.pci[pci].numa_node;
    pci = t.pci[pci].parent;
  }
  return -1;
}

int pci_hops(const Topology& t, int a, int b) {
  return path_stats(t, chain_to_root(t, a), b).between;
}

std::vector<int> bridges_between(const Topology& t, int a, int b) {
  // The nodes themselves (rarely asked: once per GPU, for its nearest NIC).
  auto ca = chain_to_root(t, a);
  auto cb = chain_to_root(t, b);
  std::vector<int> between;
  bool joined = false;
  for (size_t i = 0; i < ca.size() && !joined; ++i) {
    auto it = std::find(cb.begin(), cb.end(), ca[i]);
    if (it == cb.end()) continue;
    joined = true;
    between.insert(between.end(), ca.begin() + std::min<size_t>(1, i), ca.begin() + i);
    if (it != cb.begin()) between.insert(between.end(), cb.begin() + 1, it);
    if (ca[i] != a && ca[i] != b) between.push_back(ca[i]);
  }
  if (!joined) {  // different roots: everything but the endpoints is on the path
    if (!ca.empty()) between.insert(between.end(), ca.begin() + 1, ca.end());
    if (!cb.empty()) between.insert(between.end(), cb.begin() + 1, cb.end());
  }
  std::vector<int> out;
  for (int n : between)
    if (t.pci[n].kind == PciKind::kBridge) out.push_back(n);
  return out;
}

PathLevel classify_pci_path(const Topology& t, int a, int b) {
  if (!in_range(t, a) || !in_range(t, b)) return PathLevel::kDis;
  return classify(t, a, path_stats(t, chain_to_root(t, a), b), b);
}

std::string topology_over_caps(const Topology& t) {
  auto over = [](size_t n, size_t cap, const char* what) {
    return std::to_string(n) + " " + what + ", more than the " + std::to_string(cap) +
           " fabcheck reads (far above any real node): not a node's topology";
  };
  if (t.gpus.size() > kMaxTopoGpus) return over(t.gpus.size(), kMaxTopoGpus, "GPUs");
  if (t.nics.size() > kMaxTopoNics) return over(t.nics.size(), kMaxTopoNics, "NICs");
  if (t.pci.size() > kMaxTopoPciNodes)
    return over(t.pci.size(), kMaxTopoPciNodes, "PCI nodes (root complexes, bridges, devices)");
  if (t.numa_nodes.size() > kMaxTopoNumaNodes)
    return over(t.numa_nodes.size(), kMaxTopoNumaNodes, "CPU/NUMA nodes");
  return {};
}

NicChoice nearest_nic(const Topology& t, const Gpu& gpu) {
  NicChoice best;
  bool any_rdma =
      std::any_of(t.nics.begin(), t.nics.end(), [](const Nic& n) { return n.rdma_capable(); });
  const std::vector<int> chain = chain_to_root(t, gpu.pci);
  std::tuple<int, int> best_key{1 << 30, 1 << 30};
  for (size_t i = 0; i < t.nics.size(); ++i) {
    const Nic& nic = t.nics[i];
    if (any_rdma && !nic.rdma_capable()) continue;
    PathLevel level = PathLevel::kDis;
    int hops = 0;
    if (in_range(t, gpu.pci) && in_range(t, nic.pci)) {
      PathStats p = path_stats(t, chain, nic.pci);
      level = classify(t, gpu.pci, p, nic.pci);
      hops = p.between;
    } else {
      hops = path_stats(t, chain, nic.pci).between;
    }
    std::tuple<int, int> key{static_cast<int>(level), hops};
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
