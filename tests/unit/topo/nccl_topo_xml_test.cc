// Expected values below were read off the fixture files by hand (bus ids, nesting, numaid), not
// produced by running the parser.
#include <gtest/gtest.h>

#include "tests/support/ttar.h"
#include "topo/topology_file.h"
#include "topo/topology_json.h"

namespace fabkit::topo {
namespace {

std::filesystem::path real(const std::string& name) {
  return testing::project_fixtures() / "real/nccl_topo" / name;
}

const Gpu& gpu_at(const Topology& t, const std::string& bus_id) {
  for (const auto& g : t.gpus)
    if (g.bus_id == bus_id) return g;
  throw std::runtime_error("no GPU " + bus_id);
}

TEST(NcclTopoXml, AzureNdv4EightGpusEightIbControllersFourNuma) {
  LoadedTopology lt = load_topology_file(real("azure_ndv4-topo.xml"));
  EXPECT_EQ(lt.kind, DocumentKind::kNcclTopology);
  EXPECT_EQ(lt.version, "1");
  const Topology& t = lt.topology;
  EXPECT_EQ(t.source, "nccl-topology");
  ASSERT_EQ(t.numa_nodes.size(), 4u);
  EXPECT_EQ(t.numa_nodes[3].os_index, 3);
  EXPECT_EQ(t.numa_nodes[0].cpu_count, 24);  // affinity 00ffffff
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 8u);  // class 0x020700 leaves, no <nic>: NCCL fills them in at runtime
  EXPECT_EQ(t.gpus[0].bus_id, "0003:00:00.0");
  EXPECT_EQ(t.nics[0].bus_id, "0103:00:00.0");
  EXPECT_TRUE(t.nics[0].nets.empty());
  EXPECT_TRUE(t.nics[0].rdma_capable());  // InfiniBand class
  // 0003 and 0004 share the virtual switch ffff:ff:01.0 with NICs 0103 and 0104: PIX, a tie.
  NicChoice c = nearest_nic(t, gpu_at(t, "0003:00:00.0"));
  EXPECT_EQ(t.nics[c.nic].bus_id, "0103:00:00.0");
  EXPECT_EQ(c.level, PathLevel::kPix);
  ASSERT_EQ(c.equally_near.size(), 1u);
  EXPECT_EQ(t.nics[c.equally_near[0]].bus_id, "0104:00:00.0");
  const Gpu& g = gpu_at(t, "000c:00:00.0");
  EXPECT_EQ(numa_of(t, g.pci), 3);
  EXPECT_EQ(t.nics[nearest_nic(t, g).nic].bus_id, "0105:00:00.0");
}

TEST(NcclTopoXml, AzureNdv5OneNicPerSwitch) {
  const Topology t = load_topology_file(real("azure_ndv5-topo.xml")).topology;
  ASSERT_EQ(t.numa_nodes.size(), 2u);
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 8u);
  struct Pair {
    const char* gpu;
    const char* nic;
    int numa;
  };
  for (Pair p :
       {Pair{"0001:00:00.0", "0101:00:00.0", 0}, Pair{"0008:00:00.0", "0104:00:00.0", 0},
        Pair{"0009:00:00.0", "0105:00:00.0", 1}, Pair{"000c:00:00.0", "0108:00:00.0", 1}}) {
    const Gpu& g = gpu_at(t, p.gpu);
    NicChoice c = nearest_nic(t, g);
    EXPECT_EQ(t.nics[c.nic].bus_id, p.nic) << p.gpu;
    EXPECT_EQ(c.level, PathLevel::kPix) << p.gpu;
    EXPECT_TRUE(c.equally_near.empty()) << p.gpu;
    EXPECT_EQ(numa_of(t, g.pci), p.numa) << p.gpu;
  }
  // The GPU on one switch and the NIC on the other CPU: SYS.
  EXPECT_EQ(classify_pci_path(t, gpu_at(t, "0001:00:00.0").pci, t.nics[7].pci), PathLevel::kSys);
}

TEST(NcclTopoXml, OciH100BareMetalSixteenNetsPxb) {
  LoadedTopology lt =
      load_topology_file(real("oci_BM.GPU.H100.8.xml"));  // starts with a blank line
  const Topology& t = lt.topology;
  ASSERT_EQ(t.numa_nodes.size(), 2u);
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 8u);
  size_t nets = 0;
  for (const auto& n : t.nics) nets += n.nets.size();
  EXPECT_EQ(nets, 16u);
  const Gpu& g0 = gpu_at(t, "0000:0f:00.0");
  EXPECT_EQ(g0.dev, 0);
  EXPECT_EQ(g0.sm, 90);
  EXPECT_EQ(g0.gdr, true);
  EXPECT_EQ(g0.nvlinks, 4);
  EXPECT_EQ(g0.vendor_id, 0x10de);
  NicChoice c = nearest_nic(t, g0);
  // GPU 0f under 0d, NIC 0c under 0a, both under switch 08: three bridges -> PXB.
  EXPECT_EQ(t.nics[c.nic].bus_id, "0000:0c:00.0");
  EXPECT_EQ(c.level, PathLevel::kPxb);
  EXPECT_EQ(nic_label(t.nics[c.nic]), "mlx5_0,mlx5_1");
  EXPECT_EQ(t.nics[c.nic].nets[0].speed_mbps, 180000);
  EXPECT_EQ(t.nics[c.nic].nets[1].port, 2);
  EXPECT_EQ(t.nics[c.nic].nets[0].guid, "0x9a70500003ae6d94");
  const Gpu& g5 = gpu_at(t, "0000:a8:00.0");
  EXPECT_EQ(g5.dev, 5);
  EXPECT_EQ(numa_of(t, g5.pci), 1);
  NicChoice c5 = nearest_nic(t, g5);
  EXPECT_EQ(nic_label(t.nics[c5.nic]), "mlx5_12,mlx5_13");
  EXPECT_EQ(c5.level, PathLevel::kPxb);
}

TEST(NcclTopoXml, RcclMi300xVersionTwo) {
  LoadedTopology lt = load_topology_file(real("rccl_topo_8p_940_mi300x.xml"));
  EXPECT_EQ(lt.kind, DocumentKind::kRcclTopology);
  EXPECT_EQ(lt.version, "2");
  const Topology& t = lt.topology;
  EXPECT_EQ(t.source, "rccl-topology");
  ASSERT_EQ(t.gpus.size(), 8u);  // class 0x120000 with <gpu>
  ASSERT_EQ(t.nics.size(), 8u);
  const Gpu& g = gpu_at(t, "0000:0c:00.0");
  EXPECT_EQ(g.vendor_id, 0x1002);
  EXPECT_EQ(g.nvlinks, 7);  // <xgmi> links
  NicChoice c = nearest_nic(t, g);
  EXPECT_EQ(nic_label(t.nics[c.nic]), "mlx5_0");
  EXPECT_EQ(t.nics[c.nic].bus_id, "0000:07:00.0");
  EXPECT_EQ(c.level, PathLevel::kPxb);  // 0a, 08, 05
  EXPECT_EQ(t.nics[c.nic].nets[0].speed_mbps, 400000);
  const Gpu& g7 = gpu_at(t, "0000:df:00.0");
  EXPECT_EQ(nic_label(t.nics[nearest_nic(t, g7).nic]), "mlx5_7");
  // gcn/arch are RCCL attributes: known, so no notes.
  EXPECT_TRUE(lt.notes.empty());
}

TEST(NcclTopoXml, GraphFileIsRecognised) {
  LoadedTopology lt = load_topology_file(real("azure_ncv4-graph.xml"));
  EXPECT_EQ(lt.kind, DocumentKind::kNcclGraph);
  EXPECT_EQ(lt.graph_count, 3);
  EXPECT_TRUE(lt.topology.gpus.empty());
}

TEST(NcclTopoXml, JsonHasNearestNicPerGpu) {
  const Topology t = load_topology_file(real("azure_ndv5-topo.xml")).topology;
  Json j = to_json(t);
  ASSERT_EQ(j["gpus"].size(), 8u);
  EXPECT_EQ(j["gpus"][0]["bus_id"], "0001:00:00.0");
  EXPECT_EQ(j["gpus"][0]["nearest_nic"], "0101:00:00.0");
  EXPECT_EQ(j["gpus"][0]["path_level"], "PIX");
  EXPECT_EQ(j["gpus"][0]["numa_node"], 0);
  EXPECT_EQ(j["nics"][0]["bus_id"], "0101:00:00.0");
  EXPECT_EQ(j["numa_nodes"].size(), 2u);
}

}  // namespace
}  // namespace fabkit::topo

namespace fabkit::topo {
namespace {

// A plain Ethernet NIC that NCCL's socket transport lists (guid 0x0, gdr 0) is not RDMA-capable:
// it was counted as one, so a GPU's "nearest NIC" could be the Ethernet port.
TEST(NcclTopoXml, EthernetNetWithGuidZeroIsNotRdma) {
  const Topology t =
      load_topology_file(testing::project_fixtures() / "topo/nccl_eth_and_ib_nics.xml").topology;
  ASSERT_EQ(t.nics.size(), 2u);
  for (const auto& nic : t.nics) {
    ASSERT_EQ(nic.nets.size(), 1u);
    if (nic.nets[0].name == "eth2") {
      EXPECT_FALSE(nic.nets[0].rdma());
      EXPECT_FALSE(nic.rdma_capable());
    } else {
      EXPECT_EQ(nic.nets[0].name, "mlx5_0");
      EXPECT_TRUE(nic.rdma_capable());
    }
  }
  Json j = to_json(t);
  ASSERT_EQ(j["gpus"].size(), 1u);
  EXPECT_EQ(j["gpus"][0]["nearest_nic"], "mlx5_0");  // the ConnectX port, not the closer eth2
}

}  // namespace
}  // namespace fabkit::topo
