// The topology model every source fills in (NCCL/RCCL topology XML, hwloc XML export, live
// hwloc): NUMA nodes, a PCI tree whose roots are CPU root complexes, GPUs and NICs attached to
// nodes of that tree. Plain data; locality questions are free functions below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "topo/path_level.h"

namespace fabkit::topo {

struct NumaNode {
  int os_index = -1;
  std::string cpuset;  // hex mask as the source wrote it ("0x00ff00ff", NCCL affinity)
  int cpu_count = 0;   // logical CPUs in cpuset
  std::optional<uint64_t> memory_bytes;
  std::string cpu_vendor;  // "GenuineIntel", "AuthenticAMD" when known
};

enum class PciKind {
  kRoot,    // a CPU root complex: NCCL <cpu>, hwloc host bridge; never counted as a PCIe bridge
  kBridge,  // PCI-to-PCI bridge: a switch port or root port (class 0x0604)
  kDevice,  // an endpoint (GPU, NIC, NVMe, ...)
};
const char* to_string(PciKind k);

struct PciNode {
  PciKind kind = PciKind::kDevice;
  int parent = -1;        // index into Topology::pci; -1 for roots
  std::string bus_id;     // normalised "dddd:bb:dd.f"; empty for roots
  uint32_t class_id = 0;  // base class << 8 | subclass (0x0302 = 3D controller)
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  int numa_node = -1;      // -1: unknown / not local to one NUMA node
  std::string link_speed;  // as the source wrote it ("32.0 GT/s PCIe"); empty when unknown
  int link_width = 0;      // lanes; 0 unknown
};

struct NcclNet {     // one <net> of an NCCL topology (a port NCCL will use)
  std::string name;  // "mlx5_0" (IB/RoCE) or an interface name for sockets
  std::optional<int> dev;
  std::optional<int64_t> speed_mbps;
  std::optional<int> port;
  std::optional<bool> gdr;
  std::string guid;  // as written ("0x9a70500003ae6d94")
  // NCCL writes its socket transport's nets with guid = the device index (0x0, 0x1 ...) and
  // gdr 0; an IB/RoCE port carries its node GUID (an EUI-64). Only the latter is RDMA.
  bool rdma() const;
};

struct Gpu {
  int pci = -1;  // the node in Topology::pci
  std::string bus_id;
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  std::string name;        // model when the source knows it; empty otherwise
  std::optional<int> dev;  // NCCL: CUDA/NVML device index
  std::optional<int> rank;
  std::optional<int> sm;  // compute capability * 10 (90 = Hopper); RCCL: CU count
  std::optional<bool> gdr;
  int nvlinks = 0;  // NVLink/xGMI link entries under the GPU (hwloc: peers with bandwidth)
  // hwloc's NVLinkBandwidth/XGMIBandwidth distances (an export made with its NVML/RSMI backends):
  // each peer this GPU has a link to, with the bandwidth hwloc reports. Empty when the source
  // has none.
  struct LinkPeer {
    std::string peer;  // a GPU's bus id, "Package:<os_index>" (NVLink to a CPU), or a bus id
    uint64_t bandwidth_mbps = 0;
    std::string via;  // "NVLinkBandwidth" | "XGMIBandwidth"
  };
  std::vector<LinkPeer> link_peers;
};

struct Nic {
  int pci = -1;        // node in Topology::pci (the device, or a root when NCCL puts
                       // <nic> straight under <cpu>)
  std::string bus_id;  // empty when the NIC has no PCI device of its own
  uint32_t class_id = 0;
  std::vector<NcclNet> nets;              // NCCL topology <net> entries
  std::vector<std::string> rdma_devices;  // hwloc OpenFabrics OS devices ("mlx5_0")
  std::vector<std::string> netdevs;       // hwloc network OS devices ("ib0", "eth2")
  bool rdma_capable() const;  // has RDMA nets / RDMA devices, or is an InfiniBand-class controller
};

// Bounds on a topology model read from a file (NCCL_TOPO_FILE, `fabcheck topo FILE`, an hwloc
// export under --sysroot). Each GPU is paired with each NIC (nearest_nic), so a file of 4000 GPUs
// and 4000 NICs took 25 s, 4.5 GB and printed 421 MB (issue #36). The caps are far above any real
// node: a DGX B200 has 8 GPUs and ~10 NICs, a GB200 NVL72 compute tray 4 GPUs and 6 NICs, and NCCL
// itself holds at most 640 nodes of a kind (NCCL_TOPO_MAX_NODES, sized for 576-GPU NVLink
// domains); NICs allow for SR-IOV hosts whose VFs hwloc lists (8 ports x 255 VFs); PCI nodes for
// the 60k-device test file (NVMe-dense storage nodes have a few hundred); NUMA nodes are Linux's
// MAX_NUMNODES at its largest (NODES_SHIFT 10).
inline constexpr size_t kMaxTopoGpus = 1024;
inline constexpr size_t kMaxTopoNics = 2048;
inline constexpr size_t kMaxTopoPciNodes = 65536;
inline constexpr size_t kMaxTopoNumaNodes = 1024;

struct Topology {
  std::string source;  // "nccl-topology", "rccl-topology", "hwloc-xml", "hwloc-live"
  std::vector<NumaNode> numa_nodes;
  std::vector<PciNode> pci;
  std::vector<Gpu> gpus;
  std::vector<Nic> nics;
};

// Empty when t is within the caps above, else what is over which cap ("4000 GPUs, more than the
// 1024 ...") for an error message.
std::string topology_over_caps(const Topology& t);

// NCCL's rule (paths.cc): a path over one PCIe bridge is PIX, over several PXB, through a root
// complex PHB, across NUMA nodes SYS. a and b index Topology::pci.
PathLevel classify_pci_path(const Topology& t, int a, int b);
// Number of PCI nodes between a and b (excluding both); for tie-breaks between equal levels.
int pci_hops(const Topology& t, int a, int b);
// The NUMA node of a PCI node: its own, else the nearest ancestor's; -1 when unknown.
int numa_of(const Topology& t, int pci);
// The bridges on the path between a and b (the ones whose ACS settings redirect peer traffic).
std::vector<int> bridges_between(const Topology& t, int a, int b);

struct NicChoice {
  int nic = -1;  // index into Topology::nics; -1: no NIC at all
  PathLevel level = PathLevel::kDis;
  std::vector<int> equally_near;  // other NICs at the same level and hop count
};
// Among RDMA-capable NICs when there is any (NCCL only uses those for its IB transport), else all
// NICs: the lowest path level, then the fewest hops, then the first in source order.
NicChoice nearest_nic(const Topology& t, const Gpu& gpu);

// GPU identification by PCI identity (no GPU runtime needed): NVIDIA (0x10de) or AMD (0x1002)
// display (0x0300), 3D (0x0302) or other display controller (0x0380), or processing accelerator
// (0x1200, MI300). Known onboard/BMC VGA chips are excluded.
bool is_gpu_pci(uint16_t vendor_id, uint16_t device_id, uint32_t class_id);

}  // namespace fabkit::topo
