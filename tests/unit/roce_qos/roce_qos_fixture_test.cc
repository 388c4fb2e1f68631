// One fixture per misconfiguration (tests/fixtures/roce_qos/README.md has their provenance): each
// runs the whole gather on the RoCE port of the sysfs capture (mlx5_2 / ens1f0np0) with the
// fixture's sysfs files laid over it and its DCB and ethtool answers replayed through the netlink
// and ioctl parsers, then the judge. The healthy node has no finding at warn.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/file_reader.h"
#include "common/json_read.h"
#include "probes/nccl_env/nccl_env_facts.h"
#include "probes/rdma/rdma_facts.h"
#include "probes/roce_qos/roce_qos_facts.h"
#include "reports/baseline/node_baseline_roce_qos.h"
#include "slurm/drift_judge.h"
#include "tests/support/ttar.h"
#include "tests/unit/roce_qos/fixture_run.h"

namespace fabkit::probes {
namespace {

using fabkit::testing::TempDir;

// The codes at warn or worse, and the one info code that names a problem.
std::set<std::string> problems(const std::vector<Finding>& findings) {
  std::set<std::string> out;
  for (const auto& f : findings)
    if (f.severity >= Severity::kWarn || f.code == "roce_qos.dcb_unavailable") out.insert(f.code);
  return out;
}

const Finding* find(const std::vector<Finding>& fs, const std::string& code) {
  for (const auto& f : fs)
    if (f.code == code) return &f;
  return nullptr;
}

// The finding with `code`; an empty one (and a test failure) when there is none.
Finding get(const std::vector<Finding>& fs, const std::string& code) {
  if (const Finding* f = find(fs, code)) return *f;
  ADD_FAILURE() << "no finding " << code;
  return Finding{};
}

TEST(RoceQosFixtures, HealthyNodeHasNoWarning) {
  TempDir dir("roce-healthy");
  auto g = run_fixture("healthy", dir);
  ASSERT_EQ(g.facts.ports.size(), 1u);
  const auto& p = g.facts.ports[0];
  EXPECT_EQ(p.device, "mlx5_2");
  EXPECT_EQ(p.netdev, "ens1f0np0");
  EXPECT_EQ(p.dcb.status, "ok");
  EXPECT_EQ(p.dcb.pfc_enabled, 0x08);
  EXPECT_EQ(p.dcb.apps.size(), 64u);  // DOC-2792's dscp2prio table, one APP entry per DSCP
  EXPECT_EQ(p.ethtool.status, "ok");
  EXPECT_EQ(p.ethtool.values.at("tx_global_pause_duration"), 555665182u);
  EXPECT_EQ(g.facts.counter_interval_ms, 1000);
  auto t = nccl_traffic_path(g.facts, p);
  EXPECT_EQ(t.traffic_class, 106);
  EXPECT_EQ(t.dscp, 26);
  EXPECT_EQ(t.trust, "dscp");
  EXPECT_EQ(t.priority, 3);
  EXPECT_TRUE(problems(g.findings).empty()) << g.findings[0].code;
  ASSERT_NE(find(g.findings, "roce_qos.nccl_path"), nullptr);
}

TEST(RoceQosFixtures, PfcOffOnNcclPriority) {
  TempDir dir("roce-pfc");
  auto g = run_fixture("pfc_off_nccl_priority", dir);
  EXPECT_EQ(problems(g.findings), std::set<std::string>{"roce_qos.nccl_priority_lossy"});
  const Finding* f = find(g.findings, "roce_qos.nccl_priority_lossy");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("priority 3, which has no PFC; PFC is on priorities 0,2,6,7"),
            std::string::npos)
      << f->message;
  EXPECT_NE(f->fix.find("mlnx_qos -i ens1f0np0 --pfc 1,0,1,1,0,0,1,1"), std::string::npos)
      << f->fix;
  EXPECT_NE(f->fix.find("NCCL_IB_TC=66"), std::string::npos) << f->fix;  // DSCP 16, priority 2
  EXPECT_NE(f->fix.find("switch"), std::string::npos);
}

TEST(RoceQosFixtures, TrustPcpWithDscpTrafficClassAndNoPfc) {
  TempDir dir("roce-pcp");
  auto g = run_fixture("trust_pcp_pfc_off", dir);
  EXPECT_EQ(problems(g.findings),
            (std::set<std::string>{"roce_qos.trust_mismatch", "roce_qos.pfc_disabled"}));
  auto t = nccl_traffic_path(g.facts, g.facts.ports[0]);
  EXPECT_EQ(t.trust, "pcp");
  EXPECT_EQ(t.priority, 0);  // SL 0: untagged, priority 0
  EXPECT_NE(get(g.findings, "roce_qos.trust_mismatch").fix.find("--trust dscp"), std::string::npos);
}

TEST(RoceQosFixtures, EcnOffOnNcclPriority) {
  TempDir dir("roce-ecn");
  auto g = run_fixture("ecn_off", dir);
  EXPECT_EQ(problems(g.findings), std::set<std::string>{"roce_qos.ecn_disabled"});
  EXPECT_NE(get(g.findings, "roce_qos.ecn_disabled")
                .fix.find("echo 1 > /sys/class/net/ens1f0np0/ecn/roce_np/enable/3"),
            std::string::npos);
}

TEST(RoceQosFixtures, NcclTcOnALossyPriority) {
  TempDir dir("roce-tc");
  auto g = run_fixture("nccl_tc_lossy", dir);
  EXPECT_EQ(problems(g.findings), std::set<std::string>{"roce_qos.nccl_priority_lossy"});
  auto t = nccl_traffic_path(g.facts, g.facts.ports[0]);
  EXPECT_EQ(t.dscp, 8);
  EXPECT_EQ(t.priority, 1);
  EXPECT_NE(get(g.findings, "roce_qos.nccl_priority_lossy").fix.find("NCCL_IB_TC=106"),
            std::string::npos);
}

TEST(RoceQosFixtures, SmallNetdevMtu) {
  TempDir dir("roce-mtu");
  auto g = run_fixture("mtu_1500", dir);
  EXPECT_EQ(problems(g.findings), std::set<std::string>{"roce_qos.mtu_small"});
  EXPECT_NE(get(g.findings, "roce_qos.mtu_small").message.find("at most 1024 bytes"),
            std::string::npos);
}

TEST(RoceQosFixtures, PauseStormFails) {
  TempDir dir("roce-storm");
  auto g = run_fixture("pause_storm", dir);
  EXPECT_EQ(problems(g.findings), std::set<std::string>{"roce_qos.pause_storm"});
  const Finding f = get(g.findings, "roce_qos.pause_storm");
  EXPECT_EQ(f.severity, Severity::kFail);  // the storm error watermark fired
  EXPECT_NE(f.message.find("tx_prio3_pause_duration +910000 us"), std::string::npos) << f.message;
}

TEST(RoceQosFixtures, DiscardsRising) {
  TempDir dir("roce-discards");
  auto g = run_fixture("discards_rising", dir);
  EXPECT_EQ(problems(g.findings), std::set<std::string>{"roce_qos.discards_rising"});
  const std::string& m = get(g.findings, "roce_qos.discards_rising").message;
  EXPECT_NE(m.find("rx_discards_phy +5210, rx_out_of_buffer +17"), std::string::npos) << m;
  EXPECT_NE(get(g.findings, "roce_qos.discards_rising").message.find("rx_prio3_discards +5210"),
            std::string::npos);
}

TEST(RoceQosFixtures, DcbNotSupportedIsAFactNotAnError) {
  TempDir dir("roce-nodcb");
  auto g = run_fixture("dcb_not_supported", dir);
  const auto& p = g.facts.ports[0];
  EXPECT_EQ(p.dcb.status, "not_supported");
  EXPECT_NE(p.dcb.detail.find("errno 95"), std::string::npos) << p.dcb.detail;
  EXPECT_EQ(p.ethtool.status, "not_supported");
  EXPECT_TRUE(g.facts.errors.empty());
  EXPECT_EQ(problems(g.findings), std::set<std::string>{"roce_qos.dcb_unavailable"});
  EXPECT_EQ(worst_severity(g.findings), Severity::kInfo);
}

TEST(RoceQosFixtures, SysrootWithoutReplayReadsSysfsOnly) {
  TempDir dir("roce-sysroot");
  fabkit::testing::unpack_ttar(
      fabkit::testing::project_fixtures() / "rdma" / "sysfs_ib_hdr_roce_v2.ttar", dir.path(), "");
  fabkit::testing::write_file(dir.path() / "sys/class/net/ens1f0np0/mtu", "9000\n");
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(dir.path());
  auto f = gather_roce_qos(ctx, gather_rdma_sysfs(ctx.roots.sys), gather_nccl_env(ctx));
  reread_roce_qos(f, 50);
  EXPECT_EQ(f.source, "sysroot");
  ASSERT_EQ(f.ports.size(), 1u);
  EXPECT_EQ(f.ports[0].dcb.status, "not_read");
  EXPECT_EQ(f.ports[0].netdev_mtu, 9000);
  EXPECT_EQ(f.counter_interval_ms, 0);
}

// A --sysroot capture without DCB answers (no --qos-replay) and without qos/trust: NCCL's priority
// is unknown. ECN off on all eight priorities of the RoCE netdev still warns (issue #39).
TEST(RoceQosFixtures, SysrootCaptureWithEcnOffOnEveryPriorityWarns) {
  TempDir dir("roce-sysroot-ecn");
  fabkit::testing::unpack_ttar(
      fabkit::testing::project_fixtures() / "rdma" / "sysfs_ib_hdr_roce_v2.ttar", dir.path(), "");
  const auto net = dir.path() / "sys/class/net/ens1f0np0";
  fabkit::testing::write_file(net / "mtu", "9000\n");
  for (int prio = 0; prio < 8; ++prio)
    for (const char* o : {"roce_np", "roce_rp"})
      fabkit::testing::write_file(net / "ecn" / o / "enable" / std::to_string(prio), "0\n");
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(dir.path());
  auto f = gather_roce_qos(ctx, gather_rdma_sysfs(ctx.roots.sys), gather_nccl_env(ctx));
  ASSERT_EQ(f.ports.size(), 1u);
  EXPECT_EQ(f.ports[0].ecn_np.size(), 8u);
  EXPECT_FALSE(nccl_traffic_path(f, f.ports[0]).priority);
  auto findings = judge_roce_qos(f);
  EXPECT_EQ(problems(findings), std::set<std::string>{"roce_qos.ecn_disabled"});
  Finding e = get(findings, "roce_qos.ecn_disabled");
  EXPECT_EQ(e.severity, Severity::kWarn);
  EXPECT_NE(e.message.find("unknown (DCB not_read)"), std::string::npos) << e.message;
}

// Cluster drift over the node reports' roce_qos sections: two nodes with PFC on priority 3 and
// one where it is on 0,2,6,7 (DOC-2792's first printout): that node's PFC priorities are named.
TEST(RoceQosFixtures, ClusterDriftNamesTheNodeWithOtherPfc) {
  std::vector<slurm::NodeDriftFacts> nodes;
  for (const auto& [host, fixture] : std::vector<std::pair<std::string, std::string>>{
           {"n1", "healthy"}, {"n2", "healthy"}, {"n3", "pfc_off_nccl_priority"}}) {
    TempDir dir("roce-drift-" + host);
    Json report = {{"kind", "node"}, {"roce_qos", to_json(run_fixture(fixture, dir).facts)}};
    nodes.push_back({host, slurm::drift_facts_from_node_report(report)});
  }
  auto findings = slurm::judge_drift(nodes);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].code, "cluster.drift_roce_qos");
  EXPECT_EQ(findings[0].subject, "n3:roce_pfc:mlx5_2:1");
  EXPECT_NE(findings[0].message.find("is 0,2,6,7 on n3; 2 of 3 nodes have 3"), std::string::npos)
      << findings[0].message;
}

// `fabcheck report --baseline` on two node reports of one RoCE node: PFC moved off priority 3.
TEST(RoceQosFixtures, BaselineNamesTheChangedSetting) {
  TempDir d1("roce-base-old"), d2("roce-base-new");
  Json old_doc = {{"kind", "node"}, {"roce_qos", to_json(run_fixture("healthy", d1).facts)}};
  Json new_doc = {{"kind", "node"},
                  {"roce_qos", to_json(run_fixture("pfc_off_nccl_priority", d2).facts)}};
  auto b = reports::baseline::compare_roce_qos_baseline(old_doc, new_doc);
  EXPECT_TRUE(b.present);
  ASSERT_EQ(b.changes.size(), 1u);
  EXPECT_EQ(b.changes[0].field, "pfc_priorities");
  EXPECT_EQ(b.changes[0].old_value, "3");
  EXPECT_EQ(b.changes[0].new_value, "0,2,6,7");
  ASSERT_EQ(b.findings.size(), 1u);
  EXPECT_EQ(b.findings[0].code, "baseline.roce_qos_changed");
  EXPECT_TRUE(reports::baseline::compare_roce_qos_baseline(old_doc, old_doc).findings.empty());
}

TEST(RoceQosFixtures, NoDriftWhenOneNodeWasNotRead) {
  // A --sysroot node (DCB not read) has no PFC key: unknown is not a difference.
  std::vector<slurm::NodeDriftFacts> nodes;
  TempDir d1("roce-drift-a"), d2("roce-drift-b");
  nodes.push_back({"n1", slurm::drift_facts_from_node_report(
                             {{"roce_qos", to_json(run_fixture("healthy", d1).facts)}})});
  RoceQosFacts unread = run_fixture("healthy", d2).facts;
  unread.ports[0].dcb = DcbState{};
  nodes.push_back({"n2", slurm::drift_facts_from_node_report({{"roce_qos", to_json(unread)}})});
  EXPECT_TRUE(slurm::judge_drift(nodes).empty());
}

}  // namespace
}  // namespace fabkit::probes
