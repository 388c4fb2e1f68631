#include <gtest/gtest.h>

#include "common/report.h"
#include "probes/rdma/rdma_facts.h"

namespace fabkit::probes {
namespace {

using verbs::GidType;
using verbs::LinkLayer;
using verbs::PhysState;
using verbs::PortState;

RdmaPort ib_port(int n, PortState s = PortState::kActive, PhysState ps = PhysState::kLinkUp) {
  RdmaPort p;
  p.port = n;
  p.state = s;
  p.phys_state = ps;
  p.link_layer = LinkLayer::kInfiniBand;
  p.rate_gbps = 200;
  p.lid = 12 + n;
  p.sm_lid = 1;
  p.netdev = "ib" + std::to_string(n - 1);
  p.netdev_place = NetdevPlace::kHere;
  p.gids_known = true;
  p.gids = {{0, "fe80:0000:0000:0000:b859:9f03:00d6:5b3e", GidType::kIb, "", 0, std::nullopt}};
  return p;
}

RdmaPort roce_port(int n) {
  RdmaPort p = ib_port(n);
  p.link_layer = LinkLayer::kEthernet;
  p.rate_gbps = 100;
  p.lid = 0;
  p.sm_lid = 0;
  p.netdev = "ens1f0np0";
  p.gids = {{0, "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d", GidType::kRoceV1, "ens1f0np0", 0, true},
            {1, "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d", GidType::kRoceV2, "ens1f0np0", 0, true}};
  p.roce_v2_gid_index = 1;
  return p;
}

RdmaFacts node(std::vector<RdmaDevice> devices) {
  RdmaFacts f;
  f.source = "sysfs";
  f.devices = std::move(devices);
  return f;
}

RdmaDevice dev(const std::string& name, std::vector<RdmaPort> ports) {
  RdmaDevice d;
  d.name = name;
  d.ports = std::move(ports);
  return d;
}

const Finding* find(const std::vector<Finding>& fs, const std::string& code) {
  for (const auto& f : fs)
    if (f.code == code) return &f;
  return nullptr;
}

TEST(RdmaJudge, HealthyIbNodeHasNoFindings) {
  auto fs = judge_rdma(node({dev("mlx5_0", {ib_port(1)}), dev("mlx5_1", {ib_port(1)})}));
  EXPECT_TRUE(fs.empty()) << fs.front().code;
}

TEST(RdmaJudge, NoDevicesIsInfo) {
  auto fs = judge_rdma(RdmaFacts{});
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "rdma.no_devices");
  EXPECT_EQ(fs[0].severity, Severity::kInfo);
  EXPECT_EQ(exit_code_for(fs), kExitClean);
}

TEST(RdmaJudge, PollingPortFailsWithCableFix) {
  auto fs = judge_rdma(node({dev("mlx5_0", {ib_port(1, PortState::kDown, PhysState::kPolling)})}));
  const Finding* f = find(fs, "rdma.port_polling");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kFail);
  EXPECT_EQ(f->subject, "mlx5_0:1");
  EXPECT_NE(f->message.find("DOWN (1)"), std::string::npos);
  EXPECT_NE(f->message.find("Polling (2)"), std::string::npos);
  EXPECT_NE(f->fix.find("ibstat mlx5_0 1"), std::string::npos);
}

TEST(RdmaJudge, DisabledPortFails) {
  RdmaPort p = roce_port(1);
  p.state = PortState::kDown;
  p.phys_state = PhysState::kDisabled;
  auto fs = judge_rdma(node({dev("mlx5_0", {p})}));
  const Finding* f = find(fs, "rdma.port_disabled");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kFail);
  EXPECT_EQ(f->fix, "ip link set dev ens1f0np0 up");
}

TEST(RdmaJudge, IbPortInInitWithLidZeroNamesTheSubnetManager) {
  RdmaPort p = ib_port(1, PortState::kInit, PhysState::kLinkUp);
  p.lid = 0;
  p.sm_lid = 0;
  auto fs = judge_rdma(node({dev("mlx5_0", {p})}));
  const Finding* na = find(fs, "rdma.port_not_active");
  ASSERT_TRUE(na);
  EXPECT_NE(na->fix.find("systemctl start opensm"), std::string::npos);
  const Finding* lid = find(fs, "rdma.lid_zero");
  ASSERT_TRUE(lid);
  EXPECT_EQ(lid->severity, Severity::kFail);
  EXPECT_NE(lid->fix.find("systemctl start opensm"), std::string::npos);
  EXPECT_FALSE(find(fs, "rdma.sm_lid_zero"));  // LID 0 already says it
}

TEST(RdmaJudge, DownPortWithOtherPhysicalState) {
  auto fs = judge_rdma(node({dev("mlx5_0", {ib_port(1, PortState::kDown, PhysState::kLinkErrorRecovery)})}));
  const Finding* f = find(fs, "rdma.port_not_active");
  ASSERT_TRUE(f);
  EXPECT_NE(f->message.find("LinkErrorRecovery (6)"), std::string::npos);
}

TEST(RdmaJudge, UncabledSecondPortIsInfoOnly) {
  auto fs = judge_rdma(
      node({dev("mlx4_0", {ib_port(1), ib_port(2, PortState::kDown, PhysState::kPolling)})}));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "rdma.port_unused");
  EXPECT_EQ(fs[0].severity, Severity::kInfo);
  EXPECT_EQ(fs[0].subject, "mlx4_0:2");
  EXPECT_NE(fs[0].fix.find("NCCL_IB_HCA==mlx4_0:1"), std::string::npos);
}

TEST(RdmaJudge, WholeHcaDownBesideHealthyOnesFails) {
  auto fs = judge_rdma(node({dev("mlx5_0", {ib_port(1)}),
                             dev("mlx5_1", {ib_port(1, PortState::kDown, PhysState::kPolling)})}));
  const Finding* f = find(fs, "rdma.port_polling");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->subject, "mlx5_1:1");
  EXPECT_EQ(f->severity, Severity::kFail);
}

TEST(RdmaJudge, SmLidZeroOnActivePortWarns) {
  RdmaPort p = ib_port(1);
  p.sm_lid = 0;
  auto fs = judge_rdma(node({dev("mlx5_0", {p})}));
  const Finding* f = find(fs, "rdma.sm_lid_zero");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kWarn);
}

TEST(RdmaJudge, MixedLinkLayersAndRates) {
  auto fs = judge_rdma(node({dev("mlx5_0", {ib_port(1)}), dev("mlx5_2", {roce_port(1)})}));
  const Finding* ll = find(fs, "rdma.mixed_link_layers");
  ASSERT_TRUE(ll);
  EXPECT_NE(ll->fix.find("NCCL_IB_HCA==mlx5_0 "), std::string::npos) << ll->fix;
  const Finding* r = find(fs, "rdma.mixed_rates");
  ASSERT_TRUE(r);
  EXPECT_NE(r->message.find("100 Gb/s: mlx5_2:1; 200 Gb/s: mlx5_0:1"), std::string::npos);
}

TEST(RdmaJudge, SlowPortAmongEqualOnes) {
  RdmaPort slow = ib_port(1);
  slow.rate_gbps = 50;  // 4X HDR cable trained at 1X
  auto fs = judge_rdma(node({dev("mlx5_0", {ib_port(1)}), dev("mlx5_1", {slow})}));
  ASSERT_TRUE(find(fs, "rdma.mixed_rates"));
  EXPECT_FALSE(find(fs, "rdma.mixed_link_layers"));
}

TEST(RdmaJudge, RocePortWithoutV2Gid) {
  RdmaPort p = roce_port(1);
  p.gids.pop_back();
  p.roce_v2_gid_index.reset();
  auto fs = judge_rdma(node({dev("mlx5_0", {p})}));
  const Finding* f = find(fs, "rdma.roce_no_v2_gid");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kFail);
  EXPECT_NE(f->fix.find("dev ens1f0np0"), std::string::npos);
  EXPECT_NE(f->fix.find("cma_roce_mode -d mlx5_0 -p 1"), std::string::npos);
  p.gids_known = false;  // table unreadable: no claim
  EXPECT_FALSE(find(judge_rdma(node({dev("mlx5_0", {p})})), "rdma.roce_no_v2_gid"));
}

TEST(RdmaJudge, RocePortWithoutNetdev) {
  RdmaPort p = roce_port(1);
  p.netdev.reset();
  p.netdev_place = NetdevPlace::kNone;
  auto fs = judge_rdma(node({dev("mlx5_0", {p})}));
  const Finding* f = find(fs, "rdma.roce_no_netdev");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kFail);
}

TEST(RdmaJudge, GatherErrorsWarn) {
  RdmaFacts f = node({dev("mlx5_0", {ib_port(1)})});
  f.errors.push_back({"ibv_query_port", 5, "mlx5_0:1"});
  auto fs = judge_rdma(f);
  const Finding* g = find(fs, "rdma.gather_error");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->subject, "mlx5_0:1");
  EXPECT_NE(g->message.find("ibv_query_port"), std::string::npos);
}

}  // namespace
}  // namespace fabkit::probes
