#include "slurm/matrix_judge.h"

#include <gtest/gtest.h>

#include "slurm/schedule.h"
#include "tests/unit/slurm/numbered_hosts.h"

namespace fabkit::slurm {
namespace {

// Every pair of a full tournament measured: healthy links ~ `good` (with some spread, as this
// machine's runs have), bad ones as given.
std::vector<PairMeasurement> measure(int n, double good, const std::vector<int>& slow_nodes,
                                     const std::vector<NodePair>& slow_links,
                                     const std::vector<NodePair>& failed = {}) {
  std::vector<PairMeasurement> ms;
  int k = 0;
  for (const auto& r : round_robin(n))
    for (const auto& p : r.pairs) {
      PairMeasurement m{
          p.a, p.b, true, good * (0.7 + 0.6 * ((k++ * 37) % 11) / 10.0), 50.0, "tcp single stream",
          ""};
      for (int s : slow_nodes)
        if (p.a == s || p.b == s) m.gbit_s = good / 20;
      for (const auto& l : slow_links)
        if (l == p) m.gbit_s = good / 30;
      for (const auto& l : failed)
        if (l == p) {
          m.ok = false;
          m.gbit_s.reset();
          m.error = "reachability: pair.no_reachable_link";
        }
      ms.push_back(m);
    }
  return ms;
}

std::vector<std::string> codes(const MatrixVerdict& v) {
  std::vector<std::string> c;
  for (const auto& f : v.findings) c.push_back(f.code + " " + f.subject);
  return c;
}

TEST(MatrixJudge, HealthyClusterHasNoFindings) {
  for (int n : {3, 4, 8, 64}) {
    auto v = judge_matrix(numbered_hosts(n), measure(n, 10, {}, {}), {});
    EXPECT_TRUE(v.findings.empty()) << n << ": " << ::testing::PrintToString(codes(v));
    ASSERT_TRUE(v.reference_gbit_s);
    EXPECT_NEAR(*v.reference_gbit_s, 10, 3);
  }
}

TEST(MatrixJudge, OneBadLinkBetweenHealthyNodes) {
  for (int n : {3, 4, 5, 16, 64}) {
    SCOPED_TRACE(n);
    auto v = judge_matrix(numbered_hosts(n), measure(n, 10, {}, {{1, 2}}), {});
    EXPECT_EQ(codes(v), std::vector<std::string>{"cluster.link_slow n1<->n2"});
    EXPECT_FALSE(v.nodes[1].slow);
    EXPECT_FALSE(v.nodes[2].slow);
    EXPECT_EQ(v.findings[0].severity, Severity::kFail);
    EXPECT_NE(v.findings[0].fix.find("fabcheck pair n1 n2"), std::string::npos);
  }
}

TEST(MatrixJudge, ASlowNodeIsNamedNotEachOfItsLinks) {
  for (int n : {3, 4, 7, 64}) {
    SCOPED_TRACE(n);
    auto v = judge_matrix(numbered_hosts(n), measure(n, 10, {2}, {}), {});
    ASSERT_EQ(codes(v), std::vector<std::string>{"cluster.node_slow n2"});
    EXPECT_TRUE(v.nodes[2].slow);
    EXPECT_EQ(v.nodes[2].low, n - 1);
    EXPECT_NE(v.findings[0].fix.find("scontrol update NodeName=n2 State=DRAIN"), std::string::npos);
    for (const auto& l : v.links)
      if (l.a == 2 || l.b == 2) {
        EXPECT_EQ(l.state, "node");
      }
  }
}

TEST(MatrixJudge, SlowNodeAndAnUnrelatedBadLink) {
  auto v = judge_matrix(numbered_hosts(16), measure(16, 10, {5}, {{0, 9}}), {});
  EXPECT_EQ(codes(v),
            (std::vector<std::string>{"cluster.node_slow n5", "cluster.link_slow n0<->n9"}));
}

TEST(MatrixJudge, UnreachableNodeAndFailedLink) {
  std::vector<NodePair> all_of_3;
  for (int i = 0; i < 6; ++i)
    if (i != 3) all_of_3.push_back({std::min(i, 3), std::max(i, 3)});
  auto v = judge_matrix(numbered_hosts(6), measure(6, 10, {}, {}, all_of_3), {});
  EXPECT_EQ(codes(v), std::vector<std::string>{"cluster.node_unreachable n3"});
  auto w = judge_matrix(numbered_hosts(6), measure(6, 10, {}, {}, {{0, 4}}), {});
  ASSERT_EQ(codes(w), std::vector<std::string>{"cluster.link_failed n0<->n4"});
  EXPECT_NE(w.findings[0].message.find("pair.no_reachable_link"), std::string::npos);
}

TEST(MatrixJudge, RingPlanStillFindsASlowNode) {
  std::vector<PairMeasurement> ms;
  for (const auto& r : ring_rounds(8))
    for (const auto& p : r.pairs)
      ms.push_back({p.a, p.b, true, (p.a == 4 || p.b == 4) ? 0.5 : 10.0, 40.0, "tcp", ""});
  auto v = judge_matrix(numbered_hosts(8), ms, {});
  EXPECT_EQ(codes(v), std::vector<std::string>{"cluster.node_slow n4"});
}

// Two pairs per node (the ring plan): one bad pair is half of a node's figures, and the mean or
// plain median would drag both of its nodes down with it. The upper median keeps them healthy.
TEST(MatrixJudge, RingPlanOneBadLinkIsNotTwoBadNodes) {
  std::vector<PairMeasurement> ms;
  for (const auto& r : ring_rounds(8))
    for (const auto& p : r.pairs) {
      bool bad = p.a == 3 && p.b == 4;
      ms.push_back({p.a, p.b, true, bad ? 0.1 : 10.0, 40.0, "tcp", ""});
    }
  auto v = judge_matrix(numbered_hosts(8), ms, MatrixOptions{0.6});
  EXPECT_EQ(codes(v), std::vector<std::string>{"cluster.link_slow n3<->n4"});
  EXPECT_FALSE(v.nodes[3].slow);
  EXPECT_FALSE(v.nodes[4].slow);
}

TEST(MatrixJudge, EverythingFailedAndTwoNodeLimits) {
  auto v = judge_matrix(numbered_hosts(3), measure(3, 10, {}, {}, {{0, 1}, {0, 2}, {1, 2}}), {});
  ASSERT_FALSE(v.findings.empty());
  EXPECT_EQ(v.findings[0].code, "cluster.no_measurement");
  auto two = judge_matrix(numbered_hosts(2), measure(2, 10, {}, {}), {});
  EXPECT_EQ(codes(two), std::vector<std::string>{"cluster.localisation_limited cluster"});
  // Two nodes, the pair failed: the link is named (a node cannot be blamed on one pair).
  auto twof = judge_matrix(numbered_hosts(2), measure(2, 10, {}, {}, {{0, 1}}), {});
  EXPECT_EQ(twof.findings[0].code, "cluster.no_measurement");
}

TEST(MatrixJudge, ReTestTellsAFlakyLinkFromABadOne) {
  auto ms = measure(6, 10, {}, {{1, 2}, {3, 4}}, {{0, 5}});
  for (auto& m : ms) {
    if (m.a == 1 && m.b == 2) {  // healthy the second time: flaky
      m.retested = m.retest_ok = true;
      m.retest_gbit_s = 9.5;
    }
    if (m.a == 3 && m.b == 4) {  // slow again: bad
      m.retested = m.retest_ok = true;
      m.retest_gbit_s = 0.3;
    }
    if (m.a == 0 && m.b == 5) {  // failed, then fine: flaky
      m.retested = m.retest_ok = true;
      m.retest_gbit_s = 10;
    }
  }
  auto v = judge_matrix(numbered_hosts(6), ms, {});
  EXPECT_EQ(codes(v),
            (std::vector<std::string>{"cluster.link_flaky n0<->n5", "cluster.link_flaky n1<->n2",
                                      "cluster.link_slow n3<->n4"}))
      << ::testing::PrintToString(codes(v));
  for (const auto& f : v.findings) {
    if (f.code == "cluster.link_flaky") EXPECT_EQ(f.severity, Severity::kWarn);
    if (f.code == "cluster.link_slow")
      EXPECT_NE(f.message.find("again 0.3 Gbit/s when re-tested"), std::string::npos) << f.message;
  }
  // A re-test that fails again keeps the failure.
  auto again = measure(6, 10, {}, {}, {{0, 5}});
  for (auto& m : again)
    if (m.a == 0 && m.b == 5) m.retested = true;
  auto w = judge_matrix(numbered_hosts(6), again, {});
  ASSERT_EQ(codes(w), std::vector<std::string>{"cluster.link_failed n0<->n5"});
  EXPECT_NE(w.findings[0].message.find("failed again when re-tested"), std::string::npos);
}

TEST(MatrixJudge, Medians) {
  EXPECT_DOUBLE_EQ(upper_median({1, 9}), 9);
  EXPECT_DOUBLE_EQ(upper_median({1, 2, 9}), 2);
  EXPECT_DOUBLE_EQ(median({1, 9}), 5);
  EXPECT_DOUBLE_EQ(median({}), 0);
}

}  // namespace
}  // namespace fabkit::slurm
