// The judge on facts built in the test: the cases a sysfs fixture cannot carry (the RDMA port's
// active MTU comes from verbs), and the small pure parsers.
#include <gtest/gtest.h>
#include <linux/dcbnl.h>

#include "probes/roce_qos/roce_qos_facts.h"

namespace fabkit::probes {
namespace {

RoceQosFacts one_port() {
  RoceQosFacts f;
  f.nccl_ib_tc = "106";
  f.nccl_ib_tc_source = "environment";
  RoceQosPort p;
  p.device = "mlx5_2";
  p.port = 1;
  p.netdev = "ens1f0np0";
  p.netdev_mtu = 9000;
  p.dcb.status = "ok";
  p.dcb.pfc_source = "ieee";
  p.dcb.pfc_enabled = 0x08;
  for (int d = 0; d < 64; ++d) p.dcb.apps.push_back({IEEE_8021QAZ_APP_SEL_DSCP, d, d >> 3});
  f.ports.push_back(p);
  return f;
}

std::vector<std::string> warn_codes(const RoceQosFacts& f) {
  std::vector<std::string> out;
  for (const auto& x : judge_roce_qos(f))
    if (x.severity >= Severity::kWarn) out.push_back(x.code);
  return out;
}

TEST(RoceQosJudge, RdmaMtuBelowWhatTheNetdevAllows) {
  auto f = one_port();
  f.ports[0].active_mtu = 1024;  // what verbs reports on a port capped below the netdev's MTU
  EXPECT_EQ(warn_codes(f), std::vector<std::string>{"roce_qos.mtu_mismatch"});
  f.ports[0].active_mtu = 4096;
  EXPECT_TRUE(warn_codes(f).empty());
}

TEST(RoceQosJudge, SlIgnoredUnderTrustDscp) {
  auto f = one_port();
  f.nccl_ib_sl = "3";
  f.nccl_ib_sl_source = "/etc/nccl.conf";
  EXPECT_EQ(warn_codes(f), std::vector<std::string>{"roce_qos.trust_mismatch"});
}

TEST(RoceQosJudge, PortTrafficClassOverridesNcclIbTc) {
  auto f = one_port();
  f.nccl_ib_tc = "32";  // priority 1: lossy
  f.ports[0].traffic_class = 106;
  auto t = nccl_traffic_path(f, f.ports[0]);
  EXPECT_EQ(t.tc_source, "port traffic_class");
  EXPECT_EQ(t.priority, 3);
  EXPECT_TRUE(warn_codes(f).empty());
}

TEST(RoceQosJudge, PauseFractionWarnsWithoutStormEvents) {
  auto f = one_port();
  f.counter_interval_ms = 100;
  f.ports[0].ethtool.status = "ok";
  f.ports[0].ethtool.deltas["rx_prio3_pause_duration"] = 60000;  // 60 ms of 100 ms
  auto fs = judge_roce_qos(f);
  EXPECT_EQ(warn_codes(f), std::vector<std::string>{"roce_qos.pause_storm"});
  f.ports[0].ethtool.deltas["rx_prio3_pause_duration"] = 20000;  // 20%: PFC doing its job
  EXPECT_TRUE(warn_codes(f).empty());
}

TEST(RoceQosJudge, NoRatesWithoutAnInterval) {
  auto f = one_port();
  f.ports[0].ethtool.status = "ok";
  f.ports[0].ethtool.deltas["rx_discards_phy"] = 5;  // stale: no interval was measured
  EXPECT_TRUE(warn_codes(f).empty());
}

TEST(RoceQosParsers, TrafficClassFile) {
  EXPECT_EQ(parse_traffic_class("Global tclass=106\n"), 106);
  EXPECT_EQ(parse_traffic_class("106"), 106);
  EXPECT_EQ(parse_traffic_class("Global tclass=-1"), std::nullopt);
  EXPECT_EQ(parse_traffic_class("300"), std::nullopt);
  EXPECT_EQ(parse_traffic_class(""), std::nullopt);
}

TEST(RoceQosParsers, RoceMtuFromNetdevMtu) {
  EXPECT_EQ(roce_mtu_for_netdev_mtu(9000), 4096);
  EXPECT_EQ(roce_mtu_for_netdev_mtu(4200), 4096);
  EXPECT_EQ(roce_mtu_for_netdev_mtu(4191), 2048);
  EXPECT_EQ(roce_mtu_for_netdev_mtu(1500), 1024);
  EXPECT_EQ(roce_mtu_for_netdev_mtu(300), 0);
}

}  // namespace
}  // namespace fabkit::probes
