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

TEST(RoceQosJudge, AppPriorityOutsideZeroToSevenIsNotLossless) {
  // A driver's (or a replay file's) APP entry is a byte: priority 35 maps NCCL's DSCP 26 to no
  // 802.1p priority. Shifting the PFC mask by it was undefined; on x86 it read bit 35 % 32 = 3,
  // which is on here, and called the traffic lossless (issue #36, found by UBSan under the
  // fuzzers).
  auto f = one_port();
  f.ports[0].dcb.apps[26].priority = 35;
  ASSERT_EQ(nccl_traffic_path(f, f.ports[0]).priority, 35);
  auto fs = judge_roce_qos(f);
  EXPECT_EQ(warn_codes(f), std::vector<std::string>{"roce_qos.nccl_priority_lossy"});
  for (const auto& x : fs)
    if (x.code == "roce_qos.nccl_priority_lossy") {
      EXPECT_NE(x.message.find("priority 35, which is not an 802.1p priority (0..7)"),
                std::string::npos)
          << x.message;
      EXPECT_NE(x.fix.find("dscp-prio 26:<priority 0..7>"), std::string::npos) << x.fix;
    }
  f.ports[0].dcb.apps[26].priority = 255;  // the largest a byte holds: no PFC bit either
  EXPECT_EQ(warn_codes(f), std::vector<std::string>{"roce_qos.nccl_priority_lossy"});
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

// Trust unknown (DCB not read, no qos/trust file), so NCCL's priority is unknown: ECN off on all
// eight priorities is off on NCCL's whichever it is, and warns; off on some is not judged (issue
// #39: it read "unknown").
TEST(RoceQosJudge, EcnOffOnEveryPriorityWarnsWhenNcclPriorityIsUnknown) {
  auto f = one_port();
  RoceQosPort& p = f.ports[0];
  p.dcb = DcbState{};
  p.dcb.status = "not_read";
  for (int prio = 0; prio < 8; ++prio) p.ecn_np[prio] = p.ecn_rp[prio] = false;
  ASSERT_FALSE(nccl_traffic_path(f, p).priority);
  auto fs = judge_roce_qos(f);
  EXPECT_EQ(warn_codes(f), std::vector<std::string>{"roce_qos.ecn_disabled"});
  for (const auto& x : fs) {
    if (x.code == "roce_qos.ecn_disabled") {
      EXPECT_EQ(x.severity, Severity::kWarn);
      EXPECT_NE(x.message.find("off on every priority (/sys/class/net/ens1f0np0/ecn/roce_np/"
                               "enable/0..7 = 0, /sys/class/net/ens1f0np0/ecn/roce_rp/enable/"
                               "0..7 = 0"),
                std::string::npos)
          << x.message;
      EXPECT_NE(x.message.find("whichever priority NCCL's RoCE traffic uses"), std::string::npos);
      EXPECT_NE(x.fix.find("echo 1 > /sys/class/net/ens1f0np0/ecn/roce_np/enable/P"),
                std::string::npos)
          << x.fix;
      EXPECT_NE(x.fix.find("mlnx_qos -i ens1f0np0"), std::string::npos) << x.fix;
    }
    if (x.code == "roce_qos.nccl_path")
      EXPECT_NE(x.message.find("ECN np/rp on its priority: off (on every priority)/off (on every "
                               "priority)"),
                std::string::npos)
          << x.message;
  }
  p.ecn_rp[3] = true;  // roce_np still off everywhere: CNPs are still never sent
  auto only_np = judge_roce_qos(f);
  EXPECT_EQ(warn_codes(f), std::vector<std::string>{"roce_qos.ecn_disabled"});
  p.ecn_np[3] = true;  // on somewhere: NCCL may be on that priority, so not judged
  EXPECT_TRUE(warn_codes(f).empty());
  p.ecn_np.erase(7);  // seven files off and one missing is not "off on every priority"
  for (int prio = 0; prio < 7; ++prio) p.ecn_np[prio] = false;
  p.ecn_rp.clear();
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
