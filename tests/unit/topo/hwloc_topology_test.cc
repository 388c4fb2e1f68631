// hwloc 2.x exports from hwloc's own test suite; expected GPUs/NICs read off the XML by hand.
#include <gtest/gtest.h>

#include <chrono>

#include "tests/support/ttar.h"
#include "topo/hwloc_topology.h"
#include "topo/topology_file.h"
#include "topo/topology_json.h"

namespace fabkit::topo {
namespace {

std::filesystem::path real(const std::string& name) {
  return testing::project_fixtures() / "real/hwloc" / name;
}

const Gpu* gpu_at(const Topology& t, const std::string& bus_id) {
  for (const auto& g : t.gpus)
    if (g.bus_id == bus_id) return &g;
  return nullptr;
}

TEST(HwlocXml, TwoSocketsConnectX4BesideK40m) {
  LoadedTopology lt = load_topology_file(real("hwloc_32em64t-2n8c2t-pci-normalio.v2format.xml"));
  EXPECT_EQ(lt.kind, DocumentKind::kHwlocXml);
  const Topology& t = lt.topology;
  EXPECT_EQ(t.source, "hwloc-xml");
  ASSERT_EQ(t.numa_nodes.size(), 2u);
  EXPECT_EQ(t.numa_nodes[0].memory_bytes, 34330173440u);
  EXPECT_EQ(t.numa_nodes[1].cpu_count, 16);
  // 10de/0302 at 03:00.0, 83:00.0, 84:00.0 and AMD Tahiti 1002/0300 at 84:00.1; the Matrox VGA
  // (102b) at 05:03.0 is not a GPU.
  ASSERT_EQ(t.gpus.size(), 4u);
  EXPECT_EQ(t.gpus[0].bus_id, "0000:03:00.0");
  EXPECT_FALSE(gpu_at(t, "0000:05:03.0"));
  // NICs: the I350 ports (eth0, eth1) and the ConnectX-4 (ib0 + mlx5_0).
  ASSERT_EQ(t.nics.size(), 3u);
  const Nic* cx4 = nullptr;
  for (const auto& n : t.nics)
    if (n.bus_id == "0000:04:00.0") cx4 = &n;
  ASSERT_TRUE(cx4);
  EXPECT_EQ(cx4->rdma_devices, std::vector<std::string>{"mlx5_0"});
  EXPECT_EQ(cx4->netdevs, std::vector<std::string>{"ib0"});
  EXPECT_EQ(numa_of(t, cx4->pci), 1);

  struct Want {
    const char* gpu;
    PathLevel level;
    int numa;
  };
  for (Want w : {Want{"0000:84:00.0", PathLevel::kPix, 1},  // same root port 80:03.0
                 Want{"0000:84:00.1", PathLevel::kPix, 1},
                 Want{"0000:83:00.0", PathLevel::kPhb, 1},  // root port 80:02.0, same host bridge
                 Want{"0000:03:00.0", PathLevel::kSys, 0}}) {  // the other socket
    const Gpu* g = gpu_at(t, w.gpu);
    ASSERT_TRUE(g) << w.gpu;
    NicChoice c = nearest_nic(t, *g);
    ASSERT_GE(c.nic, 0);
    EXPECT_EQ(t.nics[c.nic].bus_id, "0000:04:00.0") << w.gpu;  // the only RDMA NIC
    EXPECT_EQ(c.level, w.level) << w.gpu;
    EXPECT_EQ(numa_of(t, g->pci), w.numa) << w.gpu;
  }
  // The bridge between the K40m and the HCA is root port 80:03.0.
  const Gpu* k40 = gpu_at(t, "0000:84:00.0");
  auto bridges = bridges_between(t, k40->pci, cx4->pci);
  ASSERT_EQ(bridges.size(), 1u);
  EXPECT_EQ(t.pci[bridges[0]].bus_id, "0000:80:03.0");
}

TEST(HwlocXml, ThreeTeslasAndAnMlx4OnSocketZero) {
  const Topology t = load_topology_file(real("hwloc_24em64t-2n6c2t-pci.xml")).topology;
  ASSERT_EQ(t.numa_nodes.size(), 2u);
  // 10de:06d2 at 06:00.0, 14:00.0, 11:00.0; the ES1000 (1002:515e) at 01:03.0 is the BMC's VGA.
  ASSERT_EQ(t.gpus.size(), 3u);
  EXPECT_FALSE(gpu_at(t, "0000:01:03.0"));
  ASSERT_EQ(t.nics.size(), 3u);  // 04:00.0 eth0, 04:00.1 eth1, 05:00.0 eth2+ib0+mlx4_0
  struct Want {
    const char* gpu;
    PathLevel level;
  };
  for (Want w : {Want{"0000:06:00.0", PathLevel::kPhb}, Want{"0000:14:00.0", PathLevel::kSys},
                 Want{"0000:11:00.0", PathLevel::kSys}}) {
    const Gpu* g = gpu_at(t, w.gpu);
    ASSERT_TRUE(g) << w.gpu;
    NicChoice c = nearest_nic(t, *g);
    EXPECT_EQ(nic_label(t.nics[c.nic]), "mlx4_0") << w.gpu;
    EXPECT_EQ(t.nics[c.nic].bus_id, "0000:05:00.0");
    EXPECT_EQ(c.level, w.level) << w.gpu;
  }
}

TEST(HwlocLive, ThisMachineLoadsFastWithoutGpuComponents) {
  auto start = std::chrono::steady_clock::now();
  Topology t = load_live_hwloc_topology();
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(t.source, "hwloc-live");
  EXPECT_GE(t.numa_nodes.size(), 1u);
  EXPECT_FALSE(t.pci.empty());
  // The CI machines have no GPU; a GPU node running this test must still load without CUDA.
  if (!t.gpus.empty()) GTEST_SKIP() << "GPU node: the no-GPU expectations do not apply";
  EXPECT_LT(ms, 1000.0) << "hwloc took " << ms << " ms";
}

TEST(HwlocLive, VersionIsTwoX) { EXPECT_EQ(hwloc_runtime_version().substr(0, 2), "2."); }

// An hwloc export made with its NVML backend holds the NVLink bandwidths as a distances matrix
// (NVLinkBandwidth, MB/s; the diagonal is the GPU's own): every GPU's link peers are read from it.
// The fixture is written in hwloc 2.x's export format (tests/fixtures/topo): two V100s linked to
// each other (50 GB/s) and the first also to its CPU package (25 GB/s).
TEST(HwlocXml, NvlinkBandwidthDistancesGiveEachGpuItsLinks) {
  const Topology t =
      load_topology_file(testing::project_fixtures() / "topo" / "hwloc_nvlink_2gpu_distances.xml")
          .topology;
  ASSERT_EQ(t.gpus.size(), 2u);
  const Gpu* a = gpu_at(t, "0000:01:00.0");
  const Gpu* b = gpu_at(t, "0000:02:00.0");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->name, "Tesla V100-SXM2-16GB");  // from the NVML OS device's GPUModel
  ASSERT_EQ(a->nvlinks, 2);
  ASSERT_EQ(a->link_peers.size(), 2u);
  EXPECT_EQ(a->link_peers[0].peer, "0000:02:00.0");
  EXPECT_EQ(a->link_peers[0].bandwidth_mbps, 50000u);
  EXPECT_EQ(a->link_peers[0].via, "NVLinkBandwidth");
  EXPECT_EQ(a->link_peers[1].peer, "Package:0");
  EXPECT_EQ(a->link_peers[1].bandwidth_mbps, 25000u);
  ASSERT_EQ(b->nvlinks, 1);
  EXPECT_EQ(b->link_peers[0].peer, "0000:01:00.0");
  // An export without the matrix keeps no links (and nvlinks 0), as before.
  const Topology plain = load_topology_file(real("hwloc_24em64t-2n6c2t-pci.xml")).topology;
  for (const auto& g : plain.gpus) {
    EXPECT_EQ(g.nvlinks, 0);
    EXPECT_TRUE(g.link_peers.empty());
  }
}

}  // namespace
}  // namespace fabkit::topo
