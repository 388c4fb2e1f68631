// The cluster baseline on the real fixture (tests/fixtures/reports/cluster-4-hosts.json) and on
// copies of it whose figures these tests change: every "new" document below is the fixture with
// the edits written next to it, so what is judged is visible in the test.
#include "reports/baseline/cluster_baseline.h"

#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>

namespace fabkit::reports::baseline {
namespace {

Json fixture() {
  std::ifstream in(std::string(FABKIT_FIXTURES) + "/reports/cluster-4-hosts.json");
  return Json::parse(in);
}

// The fixture's pair between a and b (in either order).
Json& pair_of(Json& doc, const std::string& a, const std::string& b) {
  for (auto& p : doc["cluster"]["matrix"]["pairs"])
    if ((p["a"] == a && p["b"] == b) || (p["a"] == b && p["b"] == a)) return p;
  throw std::logic_error("no pair " + a + " " + b + " in the fixture");
}

std::vector<std::string> codes(const ClusterBaselineResult& r) {
  std::vector<std::string> c;
  for (const auto& f : r.findings) c.push_back(f.code + " " + f.subject);
  return c;
}

const ClusterPairRow& row_of(const ClusterBaselineResult& r, const std::string& a,
                             const std::string& b) {
  for (const auto& p : r.pairs)
    if ((p.a == a && p.b == b) || (p.a == b && p.b == a)) return p;
  throw std::logic_error("no row " + a + " " + b);
}

// The median check off: the fixture's own slow pair (node02<->node04, 47.9 of a 95.4 median)
// would otherwise be flagged in every comparison, which the expected-figure tests cover.
ClusterBaselineOptions no_median() {
  ClusterBaselineOptions o;
  o.expect_median_pct = 0;
  return o;
}

TEST(ClusterBaseline, SameRunHasNoComparisonFindings) {
  auto r = compare_cluster_baseline(fixture(), fixture(), no_median());
  EXPECT_TRUE(r.findings.empty()) << testing::PrintToString(codes(r));
  ASSERT_EQ(r.pairs.size(), 6u);
  ASSERT_EQ(r.nodes.size(), 4u);
  EXPECT_DOUBLE_EQ(*row_of(r, "node01", "node02").change_pct, 0.0);
  EXPECT_FALSE(row_of(r, "node02", "node03").change_pct);  // failed in both: nothing to compare
  // The median of the five measured pairs (96.1 95.4 95.8 47.9 95.0) is 95.4.
  EXPECT_DOUBLE_EQ(*r.median_gbit_s, 95.4);
}

TEST(ClusterBaseline, RegressionNamedWithBothFiguresAndPairsMatchedInEitherOrder) {
  Json now = fixture();
  pair_of(now, "node01", "node03")["gbit_s"] = 60.0;  // 95.8 -> 60: -37.4%
  Json& p = pair_of(now, "node01", "node02");         // 96.1 -> 99: better, reversed order
  p["gbit_s"] = 99.0;
  p["a"] = "node02";
  p["b"] = "node01";
  auto r = compare_cluster_baseline(fixture(), now, no_median());
  ASSERT_EQ(codes(r), std::vector<std::string>{"baseline.cluster_pair_regression node01<->node03"});
  EXPECT_EQ(r.findings[0].severity, Severity::kFail);
  EXPECT_NE(r.findings[0].message.find("bandwidth 95.8 → 60 Gbit/s (-37.4%), more than 10%"),
            std::string::npos)
      << r.findings[0].message;
  const auto& up = row_of(r, "node01", "node02");
  EXPECT_FALSE(up.regressed);  // an improvement is not flagged
  EXPECT_EQ(up.a, "node02");   // the new run's order
  EXPECT_NEAR(*up.change_pct, (99.0 / 96.1 - 1) * 100, 1e-9);
  std::string t = cluster_baseline_table_text(r, no_median());
  EXPECT_NE(t.find("node01<->node03    95.800    60.000   -37.4%"), std::string::npos) << t;
  EXPECT_NE(t.find("ok → ok  REGRESSED"), std::string::npos) << t;
}

TEST(ClusterBaseline, ToleranceEdge) {
  Json now = fixture();
  pair_of(now, "node01", "node03")["gbit_s"] = 95.8 * 0.9;  // exactly 10% down: within
  EXPECT_TRUE(compare_cluster_baseline(fixture(), now, no_median()).findings.empty());
  pair_of(now, "node01", "node03")["gbit_s"] = 95.8 * 0.899;  // 10.1% down: beyond
  EXPECT_EQ(codes(compare_cluster_baseline(fixture(), now, no_median())),
            std::vector<std::string>{"baseline.cluster_pair_regression node01<->node03"});
  auto o = no_median();
  o.regression_pct = 20;
  EXPECT_TRUE(compare_cluster_baseline(fixture(), now, o).findings.empty());
}

TEST(ClusterBaseline, MissingAndNewlyFailingPairsAndLostNode) {
  Json now = fixture();
  auto& ps = now["cluster"]["matrix"]["pairs"];
  Json& failing = pair_of(now, "node01", "node04");
  failing["ok"] = false;
  failing["gbit_s"] = nullptr;
  failing["state"] = "failed";
  failing["error"] = "connect on node04: pair.agent_unreachable: timed out";
  for (size_t i = 0; i < ps.size(); ++i)  // node01<->node02 not measured this time
    if (ps[i]["a"] == "node01" && ps[i]["b"] == "node02") ps.erase(i);
  auto r = compare_cluster_baseline(fixture(), now, no_median());
  EXPECT_EQ(codes(r), (std::vector<std::string>{"baseline.cluster_pair_lost node01<->node02",
                                                "baseline.cluster_pair_failed node01<->node04"}));
  EXPECT_NE(r.findings[1].message.find("95 Gbit/s in the baseline, failed now: connect on node04"),
            std::string::npos)
      << r.findings[1].message;
  EXPECT_TRUE(row_of(r, "node01", "node02").lost);

  // A node gone from the run: one finding for it, not one per pair it was in.
  Json fewer = fixture();
  fewer["cluster"]["nodes"].erase(3);
  auto& fp = fewer["cluster"]["matrix"]["pairs"];
  for (size_t i = fp.size(); i-- > 0;)
    if (fp[i]["a"] == "node04" || fp[i]["b"] == "node04") fp.erase(i);
  auto r2 = compare_cluster_baseline(fixture(), fewer, no_median());
  EXPECT_EQ(codes(r2), std::vector<std::string>{"baseline.cluster_node_lost node04"});
}

TEST(ClusterBaseline, NodesWorseRttUp) {
  Json now = fixture();
  now["cluster"]["nodes"][1]["findings"]["fail"] = 2;  // node02: 0 -> 2 fail findings
  now["cluster"]["nodes"][2]["findings"]["warn"] = 1;  // node03: 0 -> 1 warn finding
  pair_of(now, "node03", "node04")["rtt_us"] = 30.0;   // 8.1 -> 30 us
  pair_of(now, "node01", "node03")["rtt_us"] = 16.0;   // doubled, but under +10 us: noise
  auto r = compare_cluster_baseline(fixture(), now, no_median());
  EXPECT_EQ(codes(r),
            (std::vector<std::string>{"baseline.cluster_node_findings_worse node02",
                                      "baseline.cluster_node_findings_worse node03",
                                      "baseline.cluster_rtt_regression node03<->node04"}));
  EXPECT_EQ(r.findings[0].severity, Severity::kFail);
  EXPECT_EQ(r.findings[1].severity, Severity::kWarn);
  EXPECT_NE(r.findings[0].message.find("fail 0 → 2"), std::string::npos);
  EXPECT_NE(r.findings[2].message.find("8.1 → 30 µs"), std::string::npos) << r.findings[2].message;
}

TEST(ClusterBaseline, ExpectedFiguresLinkRateAndMedian) {
  Json now = fixture();
  pair_of(now, "node01", "node02")["link_rate_gbit_s"] = 100.0;  // 96.1 of 100: fine
  pair_of(now, "node01", "node03")["link_rate_gbit_s"] = 200.0;  // 95.8 of 200: 48%
  auto r = compare_cluster_baseline(fixture(), now, {});
  EXPECT_EQ(codes(r),
            (std::vector<std::string>{"baseline.cluster_below_link_rate node01<->node03",
                                      "baseline.cluster_pair_below_median node02<->node04"}));
  EXPECT_NE(r.findings[1].message.find("47.9 Gbit/s is 50% of the median 95.4 Gbit/s of the "
                                       "run's 5 measured pairs; expected within 25%"),
            std::string::npos)
      << r.findings[1].message;
  std::string t = cluster_baseline_table_text(r, {});
  EXPECT_NE(t.find("known for 2 of 5 measured pairs"), std::string::npos) << t;
  EXPECT_NE(t.find("48% of 200 Gbit/s link rate  BELOW"), std::string::npos) << t;
  // JSON carries the same verdicts.
  Json j = cluster_baseline_to_json(r, {}, "old.json", "new.json");
  EXPECT_EQ(j["median_gbit_s"], 95.4);
  for (const auto& p : j["pairs"])
    EXPECT_EQ(p["below_median"], p["a"] == "node02" && p["b"] == "node04") << p.dump();
}

TEST(ClusterBaseline, WrongKindsNameTheDocument) {
  Json pair = {{"schema_version", 1},
               {"kind", "pair"},
               {"findings", Json::array()},
               {"pair", Json::object()}};
  try {
    compare_cluster_baseline(fixture(), pair, {});
    FAIL() << "a pair report was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("new: not a cluster run report"), std::string::npos)
        << e.what();
  }
  Json plan = {{"kind", "cluster"}, {"findings", Json::array()}, {"plan", Json::object()}};
  EXPECT_THROW(compare_cluster_baseline(plan, fixture(), {}), std::invalid_argument);
  Json bad = fixture();
  pair_of(bad, "node01", "node02")["gbit_s"] = "fast";
  try {
    compare_cluster_baseline(bad, fixture(), {});
    FAIL() << "a string figure was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("old: cluster.matrix.pairs[0].gbit_s must be a number"),
              std::string::npos)
        << e.what();
  }
  Json bad_flag = fixture();
  bad_flag["cluster"]["nodes"][2]["slow"] = "no";
  try {
    compare_cluster_baseline(fixture(), bad_flag, {});
    FAIL() << "a string flag was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("new: cluster.nodes[2].slow must be true or false"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fabkit::reports::baseline
