// Soft-RoCE (rxe) and shared network namespaces (issue 37): rxe has no DCB, PFC or trust mode, an
// unavailable fact and not a fault; a RoCE port whose netdev is in another namespace has nothing
// here to read and is left out.
#include <gtest/gtest.h>

#include "probes/nccl_env/nccl_env_facts.h"
#include "probes/rdma/rdma_facts.h"
#include "probes/roce_qos/roce_qos_facts.h"
#include "tests/support/ttar.h"

namespace fabkit::probes {
namespace {

// rxe0 (eth0), rxe1 (va) and rxe2 (vb) of one kernel, seen from the namespace that holds vb.
TEST(RoceQosSoftRoce, PortsWhoseNetdevIsElsewhereAreLeftOut) {
  testing::TempDir dir("roce_qos_rxe_netns");
  testing::unpack_ttar(testing::project_fixtures() / "rdma/sysfs_rxe_netns_b.ttar", dir.path(), "");
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(dir.path());
  RdmaFacts rdma = gather_rdma_sysfs(ctx.roots.sys);
  RoceQosFacts q = gather_roce_qos(ctx, rdma, gather_nccl_env(ctx));
  ASSERT_EQ(q.ports.size(), 1u);
  EXPECT_EQ(q.ports[0].device, "rxe2");
  EXPECT_EQ(q.ports[0].netdev, "vb");
  EXPECT_EQ(q.ports[0].netdev_mtu, 9000);
  EXPECT_TRUE(q.ports[0].soft_roce);
  for (const auto& f : judge_roce_qos(q)) EXPECT_EQ(f.severity, Severity::kInfo) << f.code;
}

TEST(RoceQosSoftRoce, NoDcbOnRxeIsInfoSayingWhy) {
  RoceQosFacts f;
  RoceQosPort p;
  p.device = "rxe0";
  p.port = 1;
  p.netdev = "eth0";
  p.netdev_mtu = 9000;
  p.active_mtu = 4096;
  p.soft_roce = true;
  p.dcb.status = "not_supported";
  p.dcb.detail = "the driver has no DCB netlink operations (RTM_GETDCB: Operation not supported)";
  f.ports.push_back(p);
  auto out = judge_roce_qos(f);
  const Finding* dcb = nullptr;
  for (const auto& x : out) {
    EXPECT_EQ(x.severity, Severity::kInfo) << x.code << ": " << x.message;
    if (x.code == "roce_qos.dcb_unavailable") dcb = &x;
  }
  ASSERT_NE(dcb, nullptr);
  EXPECT_NE(dcb->message.find("soft-RoCE device (rxe)"), std::string::npos) << dcb->message;
  EXPECT_NE(dcb->message.find("no PFC, ETS or trust mode"), std::string::npos);
}

// rxe leaves 80 bytes for its headers where a NIC's RoCE leaves 96: a netdev MTU of 4180 gives
// rxe an active MTU of 4096, which is no mismatch.
TEST(RoceQosSoftRoce, RxeMtuFromItsOwnHeaderAllowance) {
  EXPECT_EQ(roce_mtu_for_netdev_mtu(4180, /*soft_roce=*/true), 4096);
  EXPECT_EQ(roce_mtu_for_netdev_mtu(4180), 2048);
  EXPECT_EQ(roce_mtu_for_netdev_mtu(1500, true), 1024);
  EXPECT_EQ(roce_mtu_for_netdev_mtu(4175, true), 2048);
  RoceQosFacts f;
  RoceQosPort p;
  p.device = "rxe0";
  p.port = 1;
  p.netdev = "eth0";
  p.netdev_mtu = 4180;
  p.active_mtu = 4096;
  p.soft_roce = true;
  f.ports.push_back(p);
  for (const auto& x : judge_roce_qos(f)) EXPECT_NE(x.code, "roce_qos.mtu_mismatch") << x.message;
  EXPECT_EQ(to_json(f)["ports"][0]["roce_mtu_allowed"], 4096);
}

}  // namespace
}  // namespace fabkit::probes
