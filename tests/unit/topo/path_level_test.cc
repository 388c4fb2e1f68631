#include <gtest/gtest.h>

#include "topo/path_level.h"
#include "topo/pci_bus_id.h"
#include "topo/topology.h"

namespace fabkit::topo {
namespace {

TEST(PathLevel, NcclNamesAndOrder) {
  // NCCL 2.28 src/graph/topo.cc topoPathTypeStr, in this order.
  const char* names[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB",
                         "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};
  for (int i = 0; i < 12; ++i) {
    EXPECT_STREQ(to_string(static_cast<PathLevel>(i)), names[i]);
    EXPECT_EQ(path_level_from_string(names[i]), static_cast<PathLevel>(i));
  }
  EXPECT_LT(PathLevel::kLoc, PathLevel::kNvl);
  EXPECT_LT(PathLevel::kPix, PathLevel::kPxb);
  EXPECT_LT(PathLevel::kPxb, PathLevel::kPxn);
  EXPECT_LT(PathLevel::kPxn, PathLevel::kPhb);
  EXPECT_LT(PathLevel::kPhb, PathLevel::kSys);
  EXPECT_LT(PathLevel::kSys, PathLevel::kNet);
  EXPECT_FALSE(path_level_from_string("pix"));
}

TEST(PciBusId, NormalisesLikeNccl) {
  EXPECT_EQ(normalize_bus_id("0000:0F:00.0"), "0000:0f:00.0");
  EXPECT_EQ(normalize_bus_id("00000000:0F:00.0"), "0000:0f:00.0");  // NVML's 8-digit domain
  EXPECT_EQ(normalize_bus_id("0f:00.0"), "0000:0f:00.0");           // lspci without -D
  EXPECT_EQ(normalize_bus_id("ffff:ff:01.0"), "ffff:ff:01.0");      // Azure's virtual switch
  EXPECT_EQ(normalize_bus_id("1:2:3.4"), "0001:02:03.4");
  EXPECT_FALSE(normalize_bus_id("0000:0f:00"));
  EXPECT_FALSE(normalize_bus_id("0000:0f:20.0"));  // device > 0x1f
  EXPECT_FALSE(normalize_bus_id("0000:0f:00.8"));  // function > 7
  EXPECT_FALSE(normalize_bus_id("000000000:0f:00.0"));
  EXPECT_FALSE(normalize_bus_id("zz:00.0"));
  EXPECT_FALSE(normalize_bus_id(""));
}

// root0 (NUMA 0) -> sw_up -> {sw_a -> gpu0, sw_b -> nic0}, root0 -> port -> gpu1
// root1 (NUMA 1) -> port1 -> nic1 ; also gpu2 and nic2 side by side under one bridge.
Topology synthetic() {
  Topology t;
  auto add = [&](PciKind k, int parent, int numa = -1) {
    PciNode n;
    n.kind = k;
    n.parent = parent;
    n.numa_node = numa;
    t.pci.push_back(n);
    return static_cast<int>(t.pci.size()) - 1;
  };
  int root0 = add(PciKind::kRoot, -1, 0);
  int up = add(PciKind::kBridge, root0);
  int sw_a = add(PciKind::kBridge, up);
  int sw_b = add(PciKind::kBridge, up);
  int gpu0 = add(PciKind::kDevice, sw_a);  // 4
  int nic0 = add(PciKind::kDevice, sw_b);  // 5
  int port = add(PciKind::kBridge, root0);
  int gpu1 = add(PciKind::kDevice, port);  // 7
  int root1 = add(PciKind::kRoot, -1, 1);
  int port1 = add(PciKind::kBridge, root1);
  int nic1 = add(PciKind::kDevice, port1);  // 10
  int sw = add(PciKind::kBridge, port1);
  int gpu2 = add(PciKind::kDevice, sw);  // 12
  int nic2 = add(PciKind::kDevice, sw);  // 13
  EXPECT_EQ(classify_pci_path(t, gpu0, gpu0), PathLevel::kLoc);
  EXPECT_EQ(classify_pci_path(t, gpu2, nic2), PathLevel::kPix);
  EXPECT_EQ(classify_pci_path(t, gpu0, nic0), PathLevel::kPxb);
  EXPECT_EQ(classify_pci_path(t, gpu1, nic0), PathLevel::kPhb);
  EXPECT_EQ(classify_pci_path(t, gpu0, nic1), PathLevel::kSys);
  EXPECT_EQ(classify_pci_path(t, gpu2, nic1), PathLevel::kPxb);  // sw + port1
  EXPECT_EQ(bridges_between(t, gpu0, nic0), (std::vector<int>{sw_a, sw_b, up}));
  EXPECT_EQ(numa_of(t, gpu2), 1);
  (void)nic1;
  return t;
}

TEST(Classify, SwitchHostBridgeAndNuma) { synthetic(); }

TEST(Classify, TwoRootsOfOneNumaNodeArePhbUnknownNumaIsSys) {
  Topology t;
  t.pci = {
      {PciKind::kRoot, -1, "", 0, 0, 0, 0, "", 0},  {PciKind::kDevice, 0, "a", 0, 0, 0, -1, "", 0},
      {PciKind::kRoot, -1, "", 0, 0, 0, 0, "", 0},  {PciKind::kDevice, 2, "b", 0, 0, 0, -1, "", 0},
      {PciKind::kRoot, -1, "", 0, 0, 0, -1, "", 0}, {PciKind::kDevice, 4, "c", 0, 0, 0, -1, "", 0}};
  EXPECT_EQ(classify_pci_path(t, 1, 3), PathLevel::kPhb);
  EXPECT_EQ(classify_pci_path(t, 1, 5), PathLevel::kSys);
  EXPECT_EQ(classify_pci_path(t, 1, 99), PathLevel::kDis);
}

TEST(GpuIdentity, ClassAndVendor) {
  EXPECT_TRUE(is_gpu_pci(0x10de, 0x2330, 0x0302));   // H100 3D controller
  EXPECT_TRUE(is_gpu_pci(0x10de, 0x1db4, 0x0300));   // VGA-class NVIDIA
  EXPECT_FALSE(is_gpu_pci(0x10de, 0x22a3, 0x0680));  // NVSwitch bridge class
  EXPECT_TRUE(is_gpu_pci(0x1002, 0x74a1, 0x1200));   // MI300X accelerator
  EXPECT_TRUE(is_gpu_pci(0x1002, 0x740c, 0x0380));   // MI250X
  EXPECT_FALSE(is_gpu_pci(0x1002, 0x515e, 0x0300));  // ES1000 server VGA
  EXPECT_FALSE(is_gpu_pci(0x102b, 0x0532, 0x0300));  // Matrox BMC VGA
  EXPECT_FALSE(is_gpu_pci(0x1a03, 0x2000, 0x0300));  // ASPEED BMC VGA
}

}  // namespace
}  // namespace fabkit::topo
