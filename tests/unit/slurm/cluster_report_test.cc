// The cluster report from synthetic runs: which figure a pair contributes, failed steps named,
// the runs' own findings folded by code, NCCL versions taken from the pair runs, drift, and the
// profile keyed by the names given.
#include "slurm/cluster_document.h"
#include "slurm/cluster_judge.h"
#include "slurm/cluster_profile.h"
#include "slurm/path_judge.h"

#include <gtest/gtest.h>

namespace fabkit::slurm {
namespace {

Json node_report(int mtu) {
  return Json{{"schema_version", 1},
              {"kind", "node"},
              {"hostname", "samekernel"},  // netns hosts share one kernel hostname
              {"generated_at", "2026-11-25T00:00:00Z"},
              {"findings", Json::array({{{"severity", "warn"},
                                         {"code", "limits.memlock_low"},
                                         {"subject", "RLIMIT_MEMLOCK"},
                                         {"message", "64 KiB"},
                                         {"fix", "ulimit -l unlimited"}}})},
              {"limits", {{"memlock_bytes", {{"soft", 65536}, {"hard", 65536}}}}},
              {"net",
               {{"interfaces", Json::array({{{"name", "eth0"},
                                             {"kind", "physical"},
                                             {"running", true},
                                             {"up", true},
                                             {"mtu", mtu}}})}}}};
}

PairRun tcp_pair(int a, int b, const std::vector<std::string>& hosts, double gbit) {
  PairRun r;
  r.a = a;
  r.b = b;
  r.facts.host_a = hosts[a];
  r.facts.host_b = hosts[b];
  pair::LinkResult l;
  l.a = {"eth0", "10.0.0." + std::to_string(a + 1), 24, 1500, std::nullopt, "physical"};
  l.b = {"eth0", "10.0.0." + std::to_string(b + 1), 24, 1500, std::nullopt, "physical"};
  l.status = "open";
  l.single_stream_gbit_s = gbit;
  l.rtt_median_us = 30;
  r.facts.links = {l};
  r.facts.chosen_link = 0;
  return r;
}

ClusterFacts three_nodes() {
  ClusterFacts f;
  f.hosts = {"n0", "n1", "n2"};
  f.launcher = "srun";
  f.max_parallel = 4;
  f.rounds = round_robin(3);
  for (int i = 0; i < 3; ++i) {
    NodeRun n;
    n.host = f.hosts[i];
    n.ok = true;
    n.report = node_report(i == 2 ? 9000 : 1500);
    n.exit = "exit status 1";
    f.nodes.push_back(n);
  }
  f.pairs = {tcp_pair(0, 1, f.hosts, 0.02), tcp_pair(0, 2, f.hosts, 9.0),
             tcp_pair(1, 2, f.hosts, 11.0)};
  return f;
}

TEST(ClusterReport, TcpFigureAndFailedStep) {
  auto f = three_nodes();
  auto m = measurement_from_pair(f.pairs[1]);
  EXPECT_TRUE(m.ok);
  EXPECT_DOUBLE_EQ(*m.gbit_s, 9.0);
  EXPECT_EQ(m.source, "tcp single stream eth0->eth0");
  EXPECT_FALSE(m.link_rate_gbit_s.has_value());  // neither interface reports a speed
  PairRun rated = f.pairs[1];
  rated.facts.links[0].a.speed_mbps = 100000;
  rated.facts.links[0].b.speed_mbps = 25000;
  EXPECT_DOUBLE_EQ(*measurement_from_pair(rated).link_rate_gbit_s, 25.0);  // the slower side
  PairRun failed = f.pairs[0];
  failed.facts.chosen_link.reset();
  failed.facts.steps = {
      {"launch", "n0", "ok", "", "", 1},
      {"connect", "n1", "failed", "pair.agent_unreachable", "no address answered", 3000}};
  auto fm = measurement_from_pair(failed);
  EXPECT_FALSE(fm.ok);
  EXPECT_EQ(fm.error, "connect on n1: pair.agent_unreachable: no address answered");
}

TEST(ClusterReport, RdmaFigureIsTheSlowestRailAndAllRailsFailedIsAFailure) {
  auto run = three_nodes().pairs[1];
  run.facts.rdma_rc.status = "ran";
  pair::RcPairResult r1, r2;
  r1.status = "ok";
  r1.bw_gbps = 190;
  r2.status = "ok";
  r2.bw_gbps = 97;
  r1.ports.rate_gbps = 200;
  r2.ports.rate_gbps = 100;
  run.facts.rdma_rc.pairs = {r1, r2};
  auto m = measurement_from_pair(run);
  EXPECT_DOUBLE_EQ(*m.gbit_s, 97);
  EXPECT_DOUBLE_EQ(*m.link_rate_gbit_s, 100);  // the rate of the rail the figure came from
  EXPECT_EQ(m.source, "rdma_rc write_bw (slowest rail)");
  for (auto& p : run.facts.rdma_rc.pairs) {
    p.status = "failed";
    p.reason = "timeout";
    p.ports.hca_a = "mlx5_0";
    p.ports.hca_b = "mlx5_0";
  }
  auto f = measurement_from_pair(run);
  EXPECT_FALSE(f.ok);
  EXPECT_NE(f.error.find("failed on every rail: mlx5_0<->mlx5_0: timeout"), std::string::npos);
}

// On EFA nodes the ENA interface's TCP figure says nothing of the EFA path NCCL uses: the
// libfabric RDM test's bandwidth is the link's figure, and its failure is the link's error.
TEST(ClusterReport, EfaLinkFigureIsTheLibfabricRdmTestsAndItsFailureIsTheLinks) {
  auto run = three_nodes().pairs[1];
  run.facts.ofi_rdm.status = "ran";
  run.facts.ofi_rdm.provider = "efa";
  run.facts.ofi_rdm.bandwidth_gbps = 92.5;
  auto m = measurement_from_pair(run);
  ASSERT_TRUE(m.ok);
  EXPECT_DOUBLE_EQ(*m.gbit_s, 92.5);
  EXPECT_EQ(m.source, "ofi_rdm efa bandwidth");
  run.facts.ofi_rdm.status = "failed";
  run.facts.ofi_rdm.bandwidth_gbps.reset();
  run.facts.ofi_rdm.reason = "client: timeout: no completion in 10000 ms";
  auto f = measurement_from_pair(run);
  EXPECT_FALSE(f.ok);
  EXPECT_EQ(f.error, "ofi_rdm (efa): client: timeout: no completion in 10000 ms");
  run.facts.ofi_rdm.status = "skipped";  // no EFA: the TCP figure, as before
  EXPECT_EQ(measurement_from_pair(run).source.rfind("tcp single stream", 0), 0u);
}

TEST(ClusterReport, FindingsFoldedJudgedAndDrift) {
  auto f = three_nodes();
  Report r = slurm::build_cluster_report(f, MatrixOptions{0.5});
  EXPECT_EQ(r.kind, "cluster");
  std::vector<std::string> got;
  for (const auto& x : r.findings) got.push_back(x.code + " | " + x.subject);
  EXPECT_EQ(got, (std::vector<std::string>{
                     "limits.memlock_low | n0: RLIMIT_MEMLOCK",
                     "cluster.link_slow | n0<->n1",
                     // The pair runs' own findings, from the pair judge (verdict.h) on the
                     // facts: no link speed known, no all-reduce transport ran.
                     "pair.link_speed_unknown | n0<->n1: eth0(10.0.0.1)->eth0(10.0.0.2)",
                     "pair.no_transports | n0<->n1: n0<->n1",
                     "cluster.drift_mtu | n2:mtu:eth0",
                 }));
  EXPECT_NE(r.findings[0].message.find("[seen on 3: n0, n1, n2]"), std::string::npos);
  const Json& c = r.sections.at(0).facts;
  EXPECT_EQ(c["nodes"][0]["findings"]["warn"], 1);
  EXPECT_EQ(c["matrix"]["pairs"][0]["state"], "slow");
  EXPECT_EQ(c["drift"]["n2"]["mtu:eth0"], "9000");
  EXPECT_EQ(c["schedule"]["rounds"], 3);
}

TEST(ClusterReport, ReTestsAreMatchedToTheirPair) {
  auto f = three_nodes();
  f.pairs[0] = tcp_pair(0, 1, f.hosts, 0.02);
  PairRun again = tcp_pair(0, 1, f.hosts, 10.5);
  again.round = -1;
  f.retests = {again};
  Report r = slurm::build_cluster_report(f, MatrixOptions{0.5});
  bool flaky = false;
  for (const auto& x : r.findings)
    flaky = flaky || (x.code == "cluster.link_flaky" && x.subject == "n0<->n1");
  EXPECT_TRUE(flaky);
  const Json& p0 = r.sections.at(0).facts["matrix"]["pairs"][0];
  EXPECT_EQ(p0["state"], "flaky");
  EXPECT_EQ(p0["retested"], true);
  EXPECT_DOUBLE_EQ(p0["retest_gbit_s"].get<double>(), 10.5);
  EXPECT_EQ(r.sections.at(0).facts["matrix"]["pairs"][1]["retested"], false);
}

TEST(ClusterReport, ChosenLinkRttHistogramPerPair) {
  auto f = three_nodes();
  LatencyHistogram h;
  for (double us : {28.0, 30.0, 31.0, 95.0}) h.add(us);
  f.pairs[1].facts.links[0].rtt_histogram = h;
  f.pairs[2].facts.chosen_link.reset();
  Report r = slurm::build_cluster_report(f, MatrixOptions{0.5});
  const Json& pairs = r.sections.at(0).facts["matrix"]["pairs"];
  EXPECT_TRUE(pairs.at(0).at("rtt_histogram").is_null());  // its agent sent none
  EXPECT_EQ(pairs.at(1).at("rtt_histogram"), to_json(h));
  EXPECT_EQ(
      histogram_from_json(pairs.at(1).at("rtt_histogram"), "pairs[1].rtt_histogram", 4).total(),
      4u);
  EXPECT_TRUE(pairs.at(2).at("rtt_histogram").is_null());  // no link chosen
}

TEST(ClusterReport, FailedNodeCheckAndNcclVersionFromPairs) {
  auto f = three_nodes();
  f.nodes[1].ok = false;
  f.nodes[1].report = Json();
  f.nodes[1].error = "`fabcheck node --json` on n1 ended with exit status 127";
  pair::TransportResult t;
  t.transport = "nccl-socket";
  t.ranks = Json::array({{{"extra", {{"nccl_log", {{"version", "2.21.5"}}}}}},
                         {{"extra", {{"nccl_version", 21803}}}}});
  f.pairs[1].facts.transports = {t};
  EXPECT_EQ(nccl_version_of(f.pairs, "n0"), "2.21.5");
  EXPECT_EQ(nccl_version_of(f.pairs, "n2"), "21803");
  EXPECT_EQ(nccl_version_of(f.pairs, "n1"), "");
  Report r = slurm::build_cluster_report(f, MatrixOptions{0.5});
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].code, "cluster.node_check_failed");
  EXPECT_EQ(r.findings[0].subject, "n1");
  bool nccl_drift = false;
  for (const auto& x : r.findings)
    nccl_drift = nccl_drift || x.code == "cluster.drift_nccl_version";
  EXPECT_TRUE(nccl_drift);  // n0 and n2 disagree, n1 unknown: no majority, both named
}

TEST(ClusterReport, ProfileKeysNodesByTheGivenNames) {
  auto f = three_nodes();
  auto p = cluster_profile(f, "ctl");
  std::vector<std::string> names;
  for (const auto& n : p.nodes) names.push_back(n.hostname);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"n0", "n1", "n2"}));
  for (auto& n : f.nodes) n.ok = false;
  EXPECT_ANY_THROW(cluster_profile(f, "ctl"));
}

}  // namespace
}  // namespace fabkit::slurm

namespace fabkit::slurm {
namespace {

TEST(ClusterReport, PlanNamesTheRoundsAndTheEstimate) {
  PlanInput in;
  in.nodes = 4;
  in.pairs = PairPlan::kRing;
  in.max_parallel = 1;
  in.per_pair_s = 10.0;
  Report r = slurm::build_plan_report({"a", "b", "c", "d"}, plan_cluster(in));
  const Json& p = r.sections.at(0).facts;
  EXPECT_EQ(r.sections[0].name, "plan");
  EXPECT_EQ(p["pairs"], "ring");
  EXPECT_EQ(p["plan"], "ring");
  EXPECT_EQ(p["coverage"]["pairs_measured"], 4);
  EXPECT_EQ(p["coverage"]["pairs_total"], 6);
  EXPECT_EQ(p["rounds"], 2);
  EXPECT_EQ(p["waves"], 4);  // two pairs per round, one at a time
  EXPECT_DOUBLE_EQ(p["estimated_s"].get<double>(), 40.0);
  EXPECT_DOUBLE_EQ(p["sequential_estimated_s"].get<double>(), 60.0);
  EXPECT_EQ(p["schedule"][1]["pairs"],
            Json::array({Json::array({"b", "c"}), Json::array({"a", "d"})}));
  EXPECT_TRUE(r.findings.empty());
}

TEST(ClusterReport, RunCarriesThePlannersChoiceAndCoverage) {
  auto f = three_nodes();
  const Json plain = build_cluster_report(f, MatrixOptions{}).sections[0].facts;
  EXPECT_TRUE(plain["schedule"]["planner"].is_null());
  PlanInput in;
  in.nodes = 3;
  in.budget_s = 1;  // all pairs do not fit; the ring (every pair of 3) runs anyway
  ClusterPlan plan = plan_cluster(in);
  const Json c = build_cluster_report(f, MatrixOptions{}, &plan).sections[0].facts;
  EXPECT_EQ(c["plan"], "ring");
  const Json& p = c["schedule"]["planner"];
  EXPECT_EQ(p["pairs"], "auto");
  EXPECT_EQ(p["fits_budget"], false);
  EXPECT_EQ(p["coverage"]["pairs_measured"], 3);
  EXPECT_EQ(p["coverage"]["min_pairs_per_node"], 2);
}

TEST(ClusterReport, SearchOutcomesBecomeFindingsAndTheSearchObject) {
  auto f = three_nodes();
  // Not considered: no finding, search is null.
  Report quiet = slurm::build_cluster_report(f, MatrixOptions{});
  EXPECT_TRUE(quiet.sections[0].facts["search"].is_null());
  f.search.trigger = "n0<->n1 slow after its re-test";
  f.search.ran = true;
  f.search.candidates = {0, 1, 2};
  f.search.reference_gbit_s = 10.0;
  f.search.threshold_gbit_s = 2.5;
  f.search.rounds_bound = 5;
  f.search.full_schedule_rounds = 3;
  GroupTestRun whole{{0, 1, 2}, true, 0.002, 1, "", 900, 3 << 17, 2.0};
  GroupTestRun alone{{0, 1}, true, 0.0025, 1, "", 400, 2 << 17, 2.2};
  f.search.rounds = {{whole},
                     {GroupTestRun{{0}, false, std::nullopt, 0, "", 0, 0, std::nullopt},
                      GroupTestRun{{1, 2}, false, 1.2, 1, "", 300, 2 << 17, 2.2}},
                     {alone}};
  f.search.result.rounds = 3;
  f.search.result.group_tests = 4;
  f.search.result.outcome = "found";
  f.search.result.faults = {{"link", NodePair{0, 1}, -1, 3, 3, 3}};
  Report r = slurm::build_cluster_report(f, MatrixOptions{});
  const Finding* found = nullptr;
  for (const auto& x : r.findings)
    if (x.code == "cluster.link_search_found") found = &x;
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->subject, "n0<->n1");
  EXPECT_EQ(found->severity, Severity::kFail);
  EXPECT_NE(found->message.find("3 rounds, 4 group tests (bound 5; first stage in 1 blocks; a "
                                "full pair schedule over the 3 nodes: 3 rounds)"),
            std::string::npos)
      << found->message;
  EXPECT_NE(found->message.find("slow in 3 of 3 tests"), std::string::npos) << found->message;
  const Json& s = r.sections[0].facts["search"];
  EXPECT_EQ(s["link"], "n0<->n1");
  EXPECT_EQ(s["faults"][0]["kind"], "link");
  EXPECT_EQ(s["faults"][0]["hosts"], Json::array({"n0", "n1"}));
  EXPECT_EQ(s["rounds_used"], 3);
  EXPECT_EQ(s["rounds"].size(), 3u);
  EXPECT_EQ(s["rounds"][1]["groups"][1]["hosts"], Json::array({"n1", "n2"}));
  EXPECT_EQ(s["rounds"][1]["groups"][1]["bytes"], 2 << 17);
  EXPECT_FALSE(s["rounds"][1]["groups"][1]["positive"].get<bool>());
  EXPECT_DOUBLE_EQ(s["threshold_gbit_s"].get<double>(), 2.5);
  // A pair that hid when tested alone is a warning, never a named link.
  f.search.result.outcome = "not_reproduced";
  f.search.result.faults = {{"not_reproduced", NodePair{0, 1}, -1, 0, 3, 3}};
  Report r2 = slurm::build_cluster_report(f, MatrixOptions{});
  bool warned = false;
  for (const auto& x : r2.findings) {
    EXPECT_NE(x.code, "cluster.link_search_found");
    warned =
        warned || (x.code == "cluster.link_search_not_reproduced" && x.severity == Severity::kWarn);
  }
  EXPECT_TRUE(warned);
  EXPECT_TRUE(r2.sections[0].facts["search"]["link"].is_null());
}

// Issue #43: a bad node is named as the node (not as a link to its partner), a flaky link is a
// warning, two links are two findings, and a search that stopped at its cap says more may be left.
TEST(ClusterReport, SearchNamesNodesFlakyLinksAndEveryLink) {
  auto f = three_nodes();
  f.search.trigger = "--search";
  f.search.ran = true;
  f.search.candidates = {0, 1, 2};
  f.search.reference_gbit_s = 10.0;
  f.search.threshold_gbit_s = 2.5;
  f.search.result.outcome = "found";
  f.search.result.faults = {{"node", NodePair{1, 2}, 2, 3, 3, 7},
                            {"flaky_link", NodePair{0, 1}, -1, 2, 3, 12},
                            {"link", NodePair{0, 2}, -1, 3, 3, 15}};
  f.search.result.stopped_at_cap = true;
  Report r = slurm::build_cluster_report(f, MatrixOptions{});
  std::vector<std::pair<std::string, std::string>> got;
  for (const auto& x : r.findings)
    if (x.code.rfind("cluster.link_search", 0) == 0) got.push_back({x.code, x.subject});
  EXPECT_EQ(got, (std::vector<std::pair<std::string, std::string>>{
                     {"cluster.link_search_bad_node", "n2"},
                     {"cluster.link_search_flaky", "n0<->n1"},
                     {"cluster.link_search_found", "n0<->n2"},
                     {"cluster.link_search_stopped_at_cap", "search"}}));
  for (const auto& x : r.findings) {
    if (x.code == "cluster.link_search_bad_node") {
      EXPECT_EQ(x.severity, Severity::kFail);
    }
    if (x.code == "cluster.link_search_flaky") {
      EXPECT_EQ(x.severity, Severity::kWarn);
      EXPECT_NE(x.message.find("slow in 2 of 3 tests"), std::string::npos) << x.message;
    }
    if (x.code == "cluster.link_search_found") {
      EXPECT_NE(x.message.find("one of 3 faults named"), std::string::npos) << x.message;
    }
  }
  const Json& s = r.sections[0].facts["search"];
  EXPECT_EQ(s["faults"][0]["node"], "n2");
  EXPECT_EQ(s["link"], "n0<->n2");
  EXPECT_TRUE(s["stopped_at_cap"].get<bool>());
}

TEST(ClusterReport, ABadSpinePathIsNamedWhenTheTopologyIsKnown) {
  // 12 nodes, 3 leaves of 4, 2 spines; every pair routed through leaf0<->spine1 measures 0.02.
  ClusterFacts f;
  f.launcher = "srun";
  f.max_parallel = 4;
  FabricTopology t;
  t.nodes = 12;
  t.spines = 2;
  t.leaf_names = {"leafA", "leafB", "leafC"};
  for (int i = 0; i < 12; ++i) {
    f.hosts.push_back("n" + std::to_string(i));
    t.leaf_of.push_back(i / 4);
    NodeRun n;
    n.host = f.hosts.back();
    n.ok = true;
    n.report = node_report(1500);
    f.nodes.push_back(n);
  }
  f.rounds = round_robin(12);
  for (const auto& r : f.rounds)
    for (const auto& p : r.pairs) {
      const auto paths = pair_spine_paths(t, p.a, p.b);
      bool bad = std::find(paths.begin(), paths.end(), SpinePath{0, 1}) != paths.end();
      f.pairs.push_back(tcp_pair(p.a, p.b, f.hosts, bad ? 0.02 : 10.0));
    }
  auto has_path = [](const ClusterJudgement& j) {
    for (const auto& x : j.findings)
      if (x.code == "cluster.spine_path_slow") return x.subject == "leafA<->spine1";
    return false;
  };
  EXPECT_FALSE(has_path(judge_cluster(f, MatrixOptions{})));  // no topology: no path judged
  f.topology = t;
  EXPECT_TRUE(has_path(judge_cluster(f, MatrixOptions{})));
}

}  // namespace
}  // namespace fabkit::slurm

namespace fabkit::slurm {
namespace {}  // namespace
}  // namespace fabkit::slurm
