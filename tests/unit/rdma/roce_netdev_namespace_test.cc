// Where a RoCE port's net device is (issue 37): in this network namespace, in another one (a
// container on a shared-RDMA host, soft-RoCE devices of two namespaces of one kernel), or not in
// the capture at all. Only "the kernel knows no netdev" is the port's fault.
#include <gtest/gtest.h>

#include <fstream>

#include "probes/rdma/rdma_facts.h"
#include "tests/support/ttar.h"
#include "verbs/fake_verbs_api.h"

namespace fabkit::probes {
namespace {

using testing::TempDir;
using testing::write_file;

const Finding* find(const std::vector<Finding>& fs, const std::string& code) {
  for (const auto& f : fs)
    if (f.code == code) return &f;
  return nullptr;
}

const RdmaPort& port_of(const RdmaFacts& f, const std::string& dev) {
  for (const auto& d : f.devices)
    if (d.name == dev) return d.ports.at(0);
  throw std::runtime_error("no device " + dev);
}

RdmaFacts unpack(const std::string& ttar, TempDir& dir, bool live = false) {
  testing::unpack_ttar(testing::project_fixtures() / "rdma" / ttar, dir.path(), "");
  return gather_rdma_sysfs(dir.path() / "sys", live);
}

// A real capture (tests/vm/capture_rxe_sysfs.py): rxe0 (eth0), rxe1 (va) and rxe2 (vb) of one
// kernel, seen from namespace B, which has vb only.
TEST(RoceNetdevNamespace, NetdevInAnotherNamespaceIsInfoNamingTheUsablePorts) {
  TempDir dir("rxe_netns");
  RdmaFacts f = unpack("sysfs_rxe_netns_b.ttar", dir);
  ASSERT_TRUE(f.errors.empty()) << f.errors.front().to_string();
  ASSERT_EQ(f.devices.size(), 3u);
  EXPECT_EQ(f.devices[0].parent, "eth0");
  EXPECT_EQ(port_of(f, "rxe0").netdev_place, NetdevPlace::kOtherNamespace);
  EXPECT_EQ(port_of(f, "rxe0").netdev, "eth0");  // the kernel's name, though not ours
  EXPECT_EQ(port_of(f, "rxe1").netdev_place, NetdevPlace::kOtherNamespace);
  const RdmaPort& mine = port_of(f, "rxe2");
  EXPECT_EQ(mine.netdev_place, NetdevPlace::kHere);
  EXPECT_EQ(mine.netdev, "vb");
  EXPECT_EQ(mine.link_layer, verbs::LinkLayer::kEthernet);
  EXPECT_EQ(mine.roce_v2_gid_index, 1);  // ::ffff:192.168.77.2, RoCE v2
  EXPECT_EQ(mine.gids.at(1).gid, "0000:0000:0000:0000:0000:ffff:c0a8:4d02");
  EXPECT_EQ(mine.gids.at(1).type, verbs::GidType::kRoceV2);

  auto out = judge_rdma(f);
  EXPECT_EQ(find(out, "rdma.roce_no_netdev"), nullptr);
  EXPECT_EQ(find(out, "rdma.mixed_rates"), nullptr);  // rxe0's 2.5 Gb/s is not usable here
  const Finding* elsewhere = find(out, "rdma.roce_netdev_elsewhere");
  ASSERT_NE(elsewhere, nullptr);
  EXPECT_EQ(elsewhere->severity, Severity::kInfo);
  EXPECT_NE(elsewhere->message.find("rxe0:1 (eth0), rxe1:1 (va)"), std::string::npos)
      << elsewhere->message;
  EXPECT_NE(elsewhere->message.find("can use only rxe2:1 (vb)"), std::string::npos);
  EXPECT_EQ(elsewhere->fix, "keep jobs on the usable ports: NCCL_IB_HCA==rxe2:1");
  EXPECT_EQ(worst_severity(out), Severity::kInfo);
  Json j = to_json(f)["devices"];
  EXPECT_EQ(j[0]["ports"][0]["netdev_place"], "other_namespace");
  EXPECT_EQ(j[2]["ports"][0]["netdev_place"], "here");
  EXPECT_EQ(j[2]["parent"], "vb");
}

// The same boot from the initial namespace: rxe0 is here, with the driver's hw_counters (a
// non-initial namespace's view has none).
TEST(RoceNetdevNamespace, InitialNamespaceCaptureReadsRxeCounters) {
  TempDir dir("rxe_initial");
  RdmaFacts f = unpack("sysfs_rxe_initial_netns.ttar", dir);
  ASSERT_TRUE(f.errors.empty()) << f.errors.front().to_string();
  read_port_counters(dir.path() / "sys", f, 0);
  const RdmaPort& rxe0 = port_of(f, "rxe0");
  EXPECT_EQ(rxe0.netdev_place, NetdevPlace::kHere);
  EXPECT_EQ(rxe0.netdev, "eth0");
  EXPECT_EQ(rxe0.rate_gbps, 2.5);
  EXPECT_EQ(rxe0.gids.at(1).gid, "0000:0000:0000:0000:0000:ffff:c612:3c0b");
  EXPECT_EQ(rxe0.counter_dirs, std::vector<std::string>{"hw_counters"});
  EXPECT_TRUE(rxe0.counters.count("sent_pkts"));
  EXPECT_TRUE(rxe0.counters.count("retry_exceeded_err"));
  EXPECT_TRUE(port_of(f, "rxe2").counter_dirs.size() == 1u);  // the full device, seen from here
  EXPECT_EQ(port_of(f, "rxe1").netdev_place, NetdevPlace::kOtherNamespace);
  EXPECT_EQ(port_of(f, "rxe2").netdev_place, NetdevPlace::kOtherNamespace);
  auto out = judge_rdma(f);
  EXPECT_EQ(worst_severity(out), Severity::kInfo);
  const Finding* elsewhere = find(out, "rdma.roce_netdev_elsewhere");
  ASSERT_NE(elsewhere, nullptr);
  EXPECT_NE(elsewhere->message.find("can use only rxe0:1 (eth0)"), std::string::npos)
      << elsewhere->message;
}

TEST(RoceNetdevNamespace, NoPortUsableFromThisNamespaceFails) {
  TempDir dir("rxe_netns_none");
  testing::unpack_ttar(testing::project_fixtures() / "rdma/sysfs_rxe_netns_b.ttar", dir.path(), "");
  std::filesystem::remove_all(dir.path() / "sys/class/net/vb");
  RdmaFacts f = gather_rdma_sysfs(dir.path() / "sys");
  auto out = judge_rdma(f);
  const Finding* none = find(out, "rdma.roce_no_usable_netdev");
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->severity, Severity::kFail);
  EXPECT_NE(none->message.find("rxe0:1 (eth0), rxe1:1 (va), rxe2:1 (vb)"), std::string::npos)
      << none->message;
  EXPECT_EQ(find(out, "rdma.roce_no_netdev"), nullptr);
}

// A capture without gid_attrs/ndevs and device/ (a restricted or partial copy of sysfs) does not
// say where mlx5_2's netdev is: "not captured", not "no netdev". Failed before issue 37.
TEST(RoceNetdevNamespace, CaptureWithoutNdevsOrDeviceNetIsNotCaptured) {
  TempDir dir("roce_no_ndevs");
  RdmaFacts f = unpack("sysfs_ib_roce_v2_no_ndevs.ttar", dir);
  ASSERT_TRUE(f.errors.empty()) << f.errors.front().to_string();
  const RdmaPort& roce = port_of(f, "mlx5_2");
  EXPECT_EQ(roce.netdev_place, NetdevPlace::kNotCaptured);
  EXPECT_FALSE(roce.netdev);
  EXPECT_EQ(roce.roce_v2_gid_index, 3);
  auto out = judge_rdma(f);
  EXPECT_EQ(find(out, "rdma.roce_no_netdev"), nullptr);
  const Finding* nc = find(out, "rdma.roce_netdev_not_captured");
  ASSERT_NE(nc, nullptr);
  EXPECT_EQ(nc->severity, Severity::kInfo);
  EXPECT_NE(nc->message.find("mlx5_2:1"), std::string::npos);
  EXPECT_NE(worst_severity(out), Severity::kFail);
}

// A peer's real capture (gpud's H100 test data): a RoCE bond with no device/, gids or gid_attrs.
// Not captured is not missing: info saying what to capture, never rdma.roce_no_netdev (issue 39
// found that FAIL; issue 37's NetdevPlace::kNotCaptured had fixed it by then).
TEST(RoceNetdevNamespace, PeerCaptureOfARoceBondWithoutDeviceNetIsNotCaptured) {
  TempDir dir("roce_gpud_bond");
  RdmaFacts f = unpack("sysfs_gpud_roce_bond_no_device.ttar", dir);
  ASSERT_TRUE(f.errors.empty()) << f.errors.front().to_string();
  const RdmaPort& bond = port_of(f, "mlx5_bond_0");
  EXPECT_EQ(bond.link_layer, verbs::LinkLayer::kEthernet);
  EXPECT_EQ(bond.netdev_place, NetdevPlace::kNotCaptured);
  auto out = judge_rdma(f);
  EXPECT_EQ(find(out, "rdma.roce_no_netdev"), nullptr);
  EXPECT_EQ(find(out, "rdma.roce_no_v2_gid"), nullptr);  // no gids captured: not judged
  const Finding* nc = find(out, "rdma.roce_netdev_not_captured");
  ASSERT_NE(nc, nullptr);
  EXPECT_EQ(nc->severity, Severity::kInfo);
  EXPECT_NE(nc->message.find("mlx5_bond_0:1"), std::string::npos);
  EXPECT_NE(nc->fix.find("capture /sys/class/net"), std::string::npos) << nc->fix;
  EXPECT_NE(worst_severity(out), Severity::kFail);
  // The same tree read as the live system: the kernel knows no netdev, a real fault.
  RdmaFacts live = gather_rdma_sysfs(dir.path() / "sys", /*live=*/true);
  EXPECT_EQ(port_of(live, "mlx5_bond_0").netdev_place, NetdevPlace::kNone);
  auto live_out = judge_rdma(live);
  const Finding* missing = find(live_out, "rdma.roce_no_netdev");
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(missing->severity, Severity::kFail);
}

// A capture with the GIDs but without gid_attrs/types: no type says RoCE v2, and none says
// otherwise. Info naming what to capture, not rdma.roce_no_v2_gid's FAIL (issue 39).
TEST(RoceNetdevNamespace, CaptureWithoutGidTypesDoesNotJudgeRoceV2) {
  TempDir dir("roce_no_types");
  testing::unpack_ttar(testing::project_fixtures() / "rdma/sysfs_ib_hdr_roce_v2.ttar", dir.path(),
                       "");
  std::filesystem::remove_all(dir.path() / "sys/class/infiniband/mlx5_2/ports/1/gid_attrs/types");
  RdmaFacts f = gather_rdma_sysfs(dir.path() / "sys");
  const RdmaPort& roce = port_of(f, "mlx5_2");
  EXPECT_TRUE(roce.gids_known);
  EXPECT_EQ(roce.gids.size(), 4u);
  EXPECT_FALSE(roce.roce_v2_gid_index);
  auto out = judge_rdma(f);
  EXPECT_EQ(find(out, "rdma.roce_no_v2_gid"), nullptr);
  const Finding* unknown = find(out, "rdma.roce_gid_types_unknown");
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(unknown->severity, Severity::kInfo);
  EXPECT_NE(unknown->message.find("mlx5_2:1 is RoCE with 4 GIDs in use"), std::string::npos)
      << unknown->message;
  EXPECT_NE(unknown->fix.find("gid_attrs"), std::string::npos);
  EXPECT_NE(worst_severity(out), Severity::kFail);
}

// The same capture names the netdev (ndevs) but holds no class/net: which namespace has it is not
// known either.
TEST(RoceNetdevNamespace, CaptureWithNdevsButNoClassNetIsNotCaptured) {
  TempDir dir("roce_ndevs_no_net");
  RdmaFacts f = unpack("sysfs_ib_hdr_roce_v2.ttar", dir);
  const RdmaPort& roce = port_of(f, "mlx5_2");
  EXPECT_EQ(roce.netdev, "ens1f0np0");
  EXPECT_EQ(roce.netdev_place, NetdevPlace::kNotCaptured);
  write_file(dir.path() / "sys/class/net/ens1f0np0/ifindex", "4\n");
  f = gather_rdma_sysfs(dir.path() / "sys");
  EXPECT_EQ(port_of(f, "mlx5_2").netdev_place, NetdevPlace::kHere);
  auto out = judge_rdma(f);
  EXPECT_EQ(find(out, "rdma.roce_netdev_not_captured"), nullptr);
}

void roce_port_files(const std::filesystem::path& dev) {
  const auto p = dev / "ports/1";
  write_file(p / "state", "4: ACTIVE\n");
  write_file(p / "phys_state", "5: LinkUp\n");
  write_file(p / "link_layer", "Ethernet\n");
  write_file(p / "rate", "100 Gb/sec (4X EDR)\n");
}

// On the live system the kernel's own word counts: a RoCE port whose GIDs and device name no
// netdev is a fault, as before.
TEST(RoceNetdevNamespace, LiveRocePortWithNoNetdevAnywhereStillFails) {
  TempDir dir("roce_live_none");
  roce_port_files(dir.path() / "sys/class/infiniband/mlx5_4");
  write_file(dir.path() / "sys/class/infiniband/mlx5_4/ports/1/gids/0",
             "0000:0000:0000:0000:0000:0000:0000:0000\n");
  RdmaFacts f = gather_rdma_sysfs(dir.path() / "sys", /*live=*/true);
  EXPECT_EQ(port_of(f, "mlx5_4").netdev_place, NetdevPlace::kNone);
  auto out = judge_rdma(f);
  const Finding* fail_f = find(out, "rdma.roce_no_netdev");
  ASSERT_NE(fail_f, nullptr);
  EXPECT_EQ(fail_f->severity, Severity::kFail);
}

// Live: this process's namespace answers (if_nametoindex). `lo` is in every namespace; the other
// name is in none.
TEST(RoceNetdevNamespace, LiveNamespaceDecidesByName) {
  TempDir dir("roce_live_ns");
  for (const char* dev : {"rxe0", "rxe1"}) {
    const auto d = dir.path() / "sys/class/infiniband" / dev;
    roce_port_files(d);
    write_file(d / "ports/1/gids/0", "fe80:0000:0000:0000:5054:00ff:fe12:3401\n");
    write_file(d / "ports/1/gid_attrs/types/0", "RoCE v2\n");
  }
  write_file(dir.path() / "sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/0", "lo\n");
  write_file(dir.path() / "sys/class/infiniband/rxe1/ports/1/gid_attrs/ndevs/0", "fabkitnx9\n");
  RdmaFacts f = gather_rdma_sysfs(dir.path() / "sys", /*live=*/true);
  EXPECT_EQ(port_of(f, "rxe0").netdev_place, NetdevPlace::kHere);
  EXPECT_EQ(port_of(f, "rxe1").netdev_place, NetdevPlace::kOtherNamespace);
  EXPECT_EQ(port_of(f, "rxe1").netdev, "fabkitnx9");
}

Json load(const std::string& name) {
  std::ifstream in(testing::project_fixtures() / "rdma" / name);
  return Json::parse(in);
}

// Verbs gives the GID's netdev as an ifindex of the netdev's own namespace. One that names nothing
// here was read as "no net device" (the false FAIL of issue 37); one that names another device
// here (the same number in our namespace) must not count as ours when sysfs names the real one.
TEST(RoceNetdevNamespace, VerbsIfindexOfAnotherNamespace) {
  auto devs = verbs::load_fake_devices(load("cx5_roce_v2.json"));
  ASSERT_EQ(devs.size(), 2u);
  for (auto& g : devs[1].ports.at(0).gids) {  // mlx5_1: its netdev is elsewhere
    g.netdev.clear();
    g.netdev_ifindex = 4242;
  }
  verbs::FakeVerbsApi api(devs);
  TempDir dir("roce_verbs_ns");
  write_file(dir.path() / "sys/class/net/ens1f0np0/ifindex", "6\n");
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(dir.path());
  ctx.verbs = &api;
  RdmaFacts f = gather_rdma(ctx);
  EXPECT_EQ(f.source, "verbs");
  EXPECT_EQ(port_of(f, "mlx5_0").netdev_place, NetdevPlace::kHere);
  EXPECT_EQ(port_of(f, "mlx5_1").netdev_place, NetdevPlace::kOtherNamespace);
  EXPECT_FALSE(port_of(f, "mlx5_1").netdev);
  auto out = judge_rdma(f);
  EXPECT_EQ(find(out, "rdma.roce_no_netdev"), nullptr);
  const Finding* elsewhere = find(out, "rdma.roce_netdev_elsewhere");
  ASSERT_NE(elsewhere, nullptr);
  EXPECT_NE(elsewhere->message.find("mlx5_1:1 (netdev unnamed)"), std::string::npos)
      << elsewhere->message;

  // Live, with sysfs naming mlx5_1's netdev: verbs' ifindex 1 resolves to our `lo`, but the
  // kernel's name says it is another device.
  for (auto& g : devs[1].ports.at(0).gids) {
    g.netdev = "lo";
    g.netdev_ifindex = 1;
  }
  verbs::FakeVerbsApi api2(devs);
  for (int i = 0; i < 4; ++i)
    write_file(
        dir.path() / "sys/class/infiniband/mlx5_1/ports/1/gid_attrs/ndevs" / std::to_string(i),
        "fabkitnx8\n");
  ctx.verbs = &api2;
  ctx.roots.live = true;
  f = gather_rdma(ctx);
  EXPECT_EQ(port_of(f, "mlx5_1").netdev_place, NetdevPlace::kOtherNamespace);
  EXPECT_EQ(port_of(f, "mlx5_1").netdev, "fabkitnx8");
}

// A container's macvlan on the host's RoCE port: GIDs of the host's netdev and of the macvlan in
// one table. The port is usable here, through the macvlan's GIDs only.
TEST(RoceNetdevNamespace, PortWithGidsOfBothNamespacesUsesOurs) {
  TempDir dir("roce_macvlan");
  const auto p = dir.path() / "sys/class/infiniband/mlx5_0/ports/1";
  roce_port_files(dir.path() / "sys/class/infiniband/mlx5_0");
  const char* gids[] = {"fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d",
                        "0000:0000:0000:0000:0000:ffff:c612:0105",
                        "0000:0000:0000:0000:0000:ffff:0a58:0007"};
  const char* ndevs[] = {"ens1f0np0", "ens1f0np0", "net1"};
  for (int i = 0; i < 3; ++i) {
    write_file(p / "gids" / std::to_string(i), std::string(gids[i]) + "\n");
    write_file(p / "gid_attrs/types" / std::to_string(i), "RoCE v2\n");
    write_file(p / "gid_attrs/ndevs" / std::to_string(i), std::string(ndevs[i]) + "\n");
  }
  write_file(dir.path() / "sys/class/net/net1/ifindex", "3\n");
  RdmaFacts f = gather_rdma_sysfs(dir.path() / "sys");
  const RdmaPort& port = port_of(f, "mlx5_0");
  EXPECT_EQ(port.netdev_place, NetdevPlace::kHere);
  EXPECT_EQ(port.netdev, "net1");
  EXPECT_EQ(port.roce_v2_gid_index, 2);  // not the host's 198.18.1.5 at index 1
  auto out = judge_rdma(f);
  EXPECT_EQ(find(out, "rdma.roce_netdev_elsewhere"), nullptr);
}

// A capture's ndevs text that no kernel would print is an error, never a path.
TEST(RoceNetdevNamespace, BadNdevNameIsAnError) {
  TempDir dir("roce_bad_ndev");
  const auto p = dir.path() / "sys/class/infiniband/mlx5_0/ports/1";
  roce_port_files(dir.path() / "sys/class/infiniband/mlx5_0");
  write_file(p / "gids/0", "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d\n");
  write_file(p / "gid_attrs/ndevs/0", "../../../etc\n");
  std::filesystem::create_directories(dir.path() / "sys/class/net");
  RdmaFacts f = gather_rdma_sysfs(dir.path() / "sys");
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_NE(f.errors[0].object.find("gid_attrs/ndevs/0: '../../../etc'"), std::string::npos)
      << f.errors[0].object;
  EXPECT_EQ(port_of(f, "mlx5_0").netdev_place, NetdevPlace::kNotCaptured);
}

}  // namespace
}  // namespace fabkit::probes
