// The rdma and efa probes over the EFA sysfs captures of tests/fixtures/efa (README.md there).
#include <gtest/gtest.h>

#include <filesystem>

#include "common/root_open.h"
#include "probes/efa/efa_facts.h"
#include "probes/rdma/rdma_facts.h"
#include "tests/support/ttar.h"
#include "topo/topology.h"

namespace fabkit::probes {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

const Finding* find(const std::vector<Finding>& fs, const std::string& code) {
  for (const auto& f : fs)
    if (f.code == code) return &f;
  return nullptr;
}

size_t count_prefix(const std::vector<Finding>& fs, const std::string& prefix) {
  size_t n = 0;
  for (const auto& f : fs) n += f.code.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

struct Node {
  RdmaFacts rdma;
  EfaFacts efa;
};

Node probe(const fs::path& root, std::map<std::string, std::string> env = {},
           const topo::Topology* topology = nullptr) {
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(root);
  Node n;
  n.rdma = gather_rdma_sysfs(ctx.roots.sys);
  n.efa = gather_efa(ctx, n.rdma, topology);
  set_efa_settings(n.efa, env);
  return n;
}

fs::path unpack(TempDir& dir, const std::string& name) {
  testing::unpack_ttar(testing::project_fixtures() / "efa" / name, dir.path(), "");
  return dir.path();
}

TEST(EfaCapture, HealthyP4dEfaPortsAreFactsNotRdmaErrors) {
  TempDir dir("efa_p4d");
  Node n = probe(unpack(dir, "sysfs_p4d_4efa.ttar"));
  ASSERT_TRUE(n.rdma.errors.empty()) << n.rdma.errors.front().to_string();
  ASSERT_EQ(n.rdma.devices.size(), 4u);
  for (const auto& d : n.rdma.devices) {
    EXPECT_EQ(d.driver, "efa") << d.name;
    ASSERT_EQ(d.ports.size(), 1u);
    EXPECT_EQ(d.ports[0].link_layer, verbs::LinkLayer::kUnspecified);
  }
  const auto rdma_findings = judge_rdma(n.rdma);
  EXPECT_EQ(count_prefix(rdma_findings, "rdma."), 0u) << rdma_findings.front().message;
  const Json j = to_json(n.rdma);
  EXPECT_EQ(j["devices"][0]["driver"], "efa");
  EXPECT_EQ(j["devices"][0]["ports"][0]["link_layer"], "Unspecified");

  EXPECT_TRUE(n.efa.on_aws);
  ASSERT_NE(n.efa.instance, nullptr);
  EXPECT_STREQ(n.efa.instance->name, "p4d.24xlarge");
  ASSERT_EQ(n.efa.devices.size(), 4u);
  EXPECT_EQ(n.efa.devices[0].name, "rdmap144s27");  // list_dir order: sorted
  EXPECT_EQ(n.efa.devices[0].bus_id, "0000:90:1b.0");
  EXPECT_EQ(n.efa.devices[0].numa_node, 1);
  EXPECT_TRUE(judge_efa(n.efa).empty()) << judge_efa(n.efa).front().message;
}

TEST(EfaCapture, P5WithOneDeviceMissingFailsNamingTheCount) {
  TempDir dir("efa_p5_31");
  const fs::path root = unpack(dir, "sysfs_p5_32efa.ttar");
  fs::remove_all(root / "sys/class/infiniband/rdmap201s0");
  Node n = probe(root);
  ASSERT_EQ(n.efa.devices.size(), 31u);
  const auto found = judge_efa(n.efa);
  const Finding* f = find(found, "efa.devices_missing");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kFail);
  EXPECT_NE(f->message.find("31 of its 32"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("1 missing"), std::string::npos) << f->message;
  EXPECT_NE(f->fix.find("32 for p5.48xlarge"), std::string::npos) << f->fix;
}

TEST(EfaCapture, P5PortDownIsAnEfaFailureNotAnIbstatOne) {
  TempDir dir("efa_p5_down");
  const fs::path root = unpack(dir, "sysfs_p5_32efa.ttar");
  testing::write_file(root / "sys/class/infiniband/rdmap130s0/ports/1/state", "1: DOWN\n");
  testing::write_file(root / "sys/class/infiniband/rdmap130s0/ports/1/phys_state", "3: Disabled\n");
  Node n = probe(root);
  const auto found = judge_efa(n.efa);
  const Finding* f = find(found, "efa.port_not_active");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->subject, "rdmap130s0");
  EXPECT_EQ(f->severity, Severity::kFail);
  EXPECT_EQ(find(found, "efa.devices_missing"), nullptr);
  const auto rf = judge_rdma(n.rdma);
  EXPECT_EQ(find(rf, "rdma.port_disabled"), nullptr);
  EXPECT_EQ(find(rf, "rdma.port_not_active"), nullptr);
}

TEST(EfaCapture, DeviceRdmaOnG5Fails) {
  TempDir dir("efa_g5");
  Node n = probe(unpack(dir, "sysfs_g5_1efa.ttar"),
                 {{"FI_PROVIDER", "efa"}, {"FI_EFA_USE_DEVICE_RDMA", "1"}});
  const auto found = judge_efa(n.efa);
  const Finding* f = find(found, "efa.device_rdma_unsupported");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kFail);
  EXPECT_NE(f->message.find("g5.48xlarge"), std::string::npos);
  EXPECT_EQ(find(found, "efa.provider_not_efa"), nullptr);
  EXPECT_EQ(n.efa.devices.size(), 1u);
  EXPECT_EQ(n.efa.devices[0].numa_node, -1);
}

TEST(EfaCapture, MissingDmiIsNamedNotGuessed) {
  TempDir dir("efa_nodmi");
  const fs::path root = unpack(dir, "sysfs_p4d_4efa.ttar");
  fs::remove_all(root / "sys/class/dmi");
  Node n = probe(root);
  EXPECT_FALSE(n.efa.on_aws);
  const auto found = judge_efa(n.efa);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].code, "efa.instance_unknown");
  EXPECT_EQ(found[0].severity, Severity::kInfo);
}

TEST(EfaCapture, UnknownInstanceTypeIsInfo) {
  TempDir dir("efa_unknown");
  const fs::path root = unpack(dir, "sysfs_p4d_4efa.ttar");
  testing::write_file(root / "sys/class/dmi/id/product_name", "p9z.96xlarge\n");
  Node n = probe(root);
  EXPECT_EQ(n.efa.instance, nullptr);
  const auto found = judge_efa(n.efa);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].code, "efa.instance_not_in_table");
  EXPECT_NE(found[0].message.find("p9z.96xlarge"), std::string::npos);
}

TEST(EfaCapture, TruncatedCaptureNamesTheMissingFile) {
  TempDir dir("efa_trunc");
  const fs::path root = unpack(dir, "sysfs_p4d_4efa.ttar");
  fs::remove(root / "sys/class/infiniband/rdmap32s27/ports/1/state");
  fs::remove(root / "sys/class/infiniband/rdmap32s27/device");
  Node n = probe(root);
  const auto rf = judge_rdma(n.rdma);
  const Finding* g = find(rf, "rdma.gather_error");
  ASSERT_NE(g, nullptr);
  EXPECT_NE(g->subject.find("rdmap32s27/ports/1/state"), std::string::npos) << g->subject;
  // Without its device link the driver is unknown: the device is not counted as EFA, and the
  // count finding names what is there.
  ASSERT_EQ(n.efa.devices.size(), 3u);
  const auto found = judge_efa(n.efa);
  const Finding* f = find(found, "efa.devices_missing");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("3 of its 4"), std::string::npos);
}

// The verbs gather turns UNSPECIFIED into InfiniBand (rdma-core did before rdma-core#884): an EFA
// port then had LID 0 and "no subnet manager". The driver read from sysfs undoes it.
TEST(EfaCapture, VerbsGatheredEfaPortIsNotInfiniBand) {
  TempDir dir("efa_verbs");
  const fs::path root = unpack(dir, "sysfs_p4d_4efa.ttar");
  RdmaFacts f;
  f.source = "verbs";
  RdmaDevice d;
  d.name = "rdmap16s27";
  RdmaPort p;
  p.port = 1;
  p.state = verbs::PortState::kActive;
  p.phys_state = verbs::PhysState::kLinkUp;
  p.link_layer = verbs::LinkLayer::kInfiniBand;
  p.lid = 0;
  p.sm_lid = 0;
  d.ports.push_back(p);
  f.devices.push_back(d);
  auto before = judge_rdma(f);
  ASSERT_NE(find(before, "rdma.lid_zero"), nullptr);  // what a live EFA node got
  auto tree = confine_reads_under(root);
  read_device_drivers(root / "sys", f);
  EXPECT_EQ(f.devices[0].driver, "efa");
  EXPECT_EQ(f.devices[0].ports[0].link_layer, verbs::LinkLayer::kUnspecified);
  EXPECT_EQ(count_prefix(judge_rdma(f), "rdma."), 0u);
}

// The p4d's layout as aws-ofi-nccl's capture describes it ("EFA NICs and GPUs meet at host
// bridges"): per root complex one EFA device and a GPU behind a switch port; the nearest GPU is
// the one under the same root (PHB), never the one across the socket link (SYS).
TEST(EfaCapture, NearestAcceleratorIsTheOneUnderTheSameRoot) {
  topo::Topology t;
  auto add = [&t](topo::PciKind kind, int parent, const std::string& bus, uint32_t cls, int numa) {
    topo::PciNode n;
    n.kind = kind;
    n.parent = parent;
    n.bus_id = bus;
    n.class_id = cls;
    n.numa_node = numa;
    t.pci.push_back(n);
    return static_cast<int>(t.pci.size() - 1);
  };
  const int root0 = add(topo::PciKind::kRoot, -1, "", 0, 0);
  const int root1 = add(topo::PciKind::kRoot, -1, "", 0, 1);
  add(topo::PciKind::kDevice, root0, "0000:10:1b.0", 0x0200, 0);  // rdmap16s27
  const int sw0 = add(topo::PciKind::kBridge, root0, "0000:10:00.0", 0x0604, 0);
  const int gpu0 = add(topo::PciKind::kDevice, sw0, "0000:11:00.0", 0x0302, 0);
  add(topo::PciKind::kDevice, root1, "0000:90:1b.0", 0x0200, 1);  // rdmap144s27
  const int sw1 = add(topo::PciKind::kBridge, root1, "0000:90:00.0", 0x0604, 1);
  const int gpu1 = add(topo::PciKind::kDevice, sw1, "0000:91:00.0", 0x0302, 1);
  for (int g : {gpu0, gpu1}) {
    topo::Gpu gpu;
    gpu.pci = g;
    gpu.bus_id = t.pci[g].bus_id;
    gpu.vendor_id = 0x10de;
    t.gpus.push_back(gpu);
  }
  TempDir dir("efa_topo");
  Node n = probe(unpack(dir, "sysfs_p4d_4efa.ttar"), {}, &t);
  EXPECT_TRUE(n.efa.topology_known);
  std::map<std::string, const EfaDevice*> by_name;
  for (const auto& d : n.efa.devices) by_name[d.name] = &d;
  ASSERT_TRUE(by_name.count("rdmap16s27") && by_name.count("rdmap144s27"));
  EXPECT_EQ(by_name["rdmap16s27"]->nearest_gpu, "0000:11:00.0");
  EXPECT_EQ(by_name["rdmap16s27"]->nearest_gpu_path, "PHB");
  EXPECT_EQ(by_name["rdmap144s27"]->nearest_gpu, "0000:91:00.0");
  // Not in the topology (a capture's PCI tree without it): no guess.
  EXPECT_FALSE(by_name["rdmap32s27"]->nearest_gpu);
}

}  // namespace
}  // namespace fabkit::probes
