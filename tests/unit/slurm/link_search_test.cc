#include "slurm/link_search.h"
#include "slurm/search_runner.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace fabkit::slurm {
namespace {

// A simulated fabric: N nodes, a set of bad links. A group test is positive when the group holds
// both ends of a bad link. It checks the searcher's promise that the groups of a round are
// disjoint (they run at the same time on real nodes).
class SimulatedFabric : public GroupTester {
 public:
  SimulatedFabric(int nodes, std::vector<NodePair> bad) : nodes_(nodes), bad_(std::move(bad)) {}
  std::vector<bool> run_round(const std::vector<std::vector<int>>& groups) override {
    ++rounds_;
    std::vector<bool> busy(nodes_, false), out;
    for (const auto& g : groups) {
      std::set<int> in;
      for (int x : g) {
        EXPECT_TRUE(x >= 0 && x < nodes_);
        EXPECT_FALSE(busy[x]) << "node " << x << " in two groups of one round";
        busy[x] = true;
        in.insert(x);
      }
      bool pos = false;
      for (const auto& l : bad_) pos = pos || (in.count(l.a) && in.count(l.b));
      if (flaky_ && rounds_ == flaky_round_) pos = false;  // the flaky link hid in this round
      out.push_back(pos);
    }
    return out;
  }
  int rounds_ = 0;
  bool flaky_ = false;
  int flaky_round_ = 0;

 private:
  int nodes_;
  std::vector<NodePair> bad_;
};

std::vector<int> iota(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

// Issue #13: one flaky link among 512 nodes named in O(log N) rounds, not N^2 pair runs.
TEST(LinkSearch, OneBadLinkAmong512NodesInLogRounds) {
  const int n = 512;
  const int bound = link_search_round_bound(n);
  EXPECT_EQ(bound, 19);  // vs 511 rounds (130,816 pair runs) for the full tournament
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> pick(0, n - 1);
  int worst = 0;
  std::vector<NodePair> cases{{0, 511}, {0, 1}, {255, 256}, {510, 511}, {3, 300}};
  for (int i = 0; i < 300; ++i) {
    int x = pick(rng), y = pick(rng);
    if (x != y) cases.push_back({std::min(x, y), std::max(x, y)});
  }
  for (const auto& bad : cases) {
    SimulatedFabric f(n, {bad});
    auto r = find_bad_link(iota(n), f);
    ASSERT_EQ(r.outcome, "found") << bad.a << "," << bad.b;
    ASSERT_TRUE(r.link);
    EXPECT_EQ(*r.link, bad);
    EXPECT_EQ(r.rounds, f.rounds_);
    EXPECT_LE(r.rounds, bound) << bad.a << "," << bad.b;
    worst = std::max(worst, r.rounds);
  }
  EXPECT_GE(worst, 17);  // the crossing case really takes ~2 log2(N/2) rounds: the bound is tight
}

TEST(LinkSearch, CleanFabricCostsOneRound) {
  SimulatedFabric f(64, {});
  auto r = find_bad_link(iota(64), f);
  EXPECT_EQ(r.outcome, "none");
  EXPECT_FALSE(r.link);
  EXPECT_EQ(r.rounds, 1);
}

TEST(LinkSearch, KnownPositiveSkipsTheFirstRoundAndSubsetsWork) {
  // Candidates need not be 0..N-1: the nodes a matrix marked suspicious.
  std::vector<int> cands{7, 9, 20, 33, 41};
  SimulatedFabric f(64, {{20, 41}});
  auto r = find_bad_link(cands, f, true);
  ASSERT_TRUE(r.link);
  EXPECT_EQ(*r.link, (NodePair{20, 41}));
  EXPECT_LE(r.rounds, link_search_round_bound(5) - 1);
}

TEST(LinkSearch, SmallCounts) {
  for (int n = 2; n <= 9; ++n)
    for (int a = 0; a < n; ++a)
      for (int b = a + 1; b < n; ++b) {
        SimulatedFabric f(n, {{a, b}});
        auto r = find_bad_link(iota(n), f);
        ASSERT_TRUE(r.link) << n << ":" << a << "," << b;
        EXPECT_EQ(*r.link, (NodePair{a, b}));
        EXPECT_LE(r.rounds, link_search_round_bound(n));
      }
  SimulatedFabric f(1, {});
  EXPECT_THROW(find_bad_link({0}, f), std::invalid_argument);
}

TEST(LinkSearch, NoConfirmingRoundWhenThePairItselfJustTestedPositive) {
  // 8 nodes, link 0-2 (the integration test's case): whole set, halves, quarters (both clean: it
  // crosses {0,1}|{2,3}), {0,2,3}, then {0,2} positive: that was the pair alone, so no 6th round.
  SimulatedFabric f(8, {{0, 2}});
  auto r = find_bad_link(iota(8), f);
  EXPECT_EQ(r.outcome, "found");
  EXPECT_EQ(r.rounds, 5);
  // Two nodes: the whole set is the pair.
  SimulatedFabric two(2, {{0, 1}});
  EXPECT_EQ(find_bad_link(iota(2), two).rounds, 1);
  // Ending on a negative branch still confirms: 0-3 is decided by {0,2} clean -> b = {3}.
  SimulatedFabric f3(8, {{0, 3}});
  auto r3 = find_bad_link(iota(8), f3);
  EXPECT_EQ(r3.outcome, "found");
  EXPECT_EQ(r3.rounds, 6);
}

TEST(LinkSearch, AFlakyLinkThatHidesIsNotReported) {
  // The link shows in the first rounds, then hides in the confirming one: no false culprit.
  SimulatedFabric f(16, {{2, 13}});
  SimulatedFabric probe(16, {{2, 13}});
  int total = find_bad_link(iota(16), probe).rounds;
  f.flaky_ = true;
  f.flaky_round_ = total;  // the last (confirming) round
  auto r = find_bad_link(iota(16), f);
  EXPECT_EQ(r.outcome, "not_reproduced");
  EXPECT_FALSE(r.link);
}

// A group test holds its fastest call to the threshold: one call preempted on a loaded machine
// (3x the others) must not make a healthy pair's figure a third of what it reached, and a rank
// that did not time each call is read at its mean.
TEST(GroupTestFigure, TheFastestCallNotTheMean) {
  pair::SizeRow s;
  s.bytes = 1 << 20;
  s.time_us = 3000;
  s.busbw_gbps = 0.5;
  s.best_time_us = 1000;
  EXPECT_DOUBLE_EQ(fastest_iteration_busbw(s), 1.5);
  s.best_time_us = 0;
  EXPECT_DOUBLE_EQ(fastest_iteration_busbw(s), 0.5);
  s.best_time_us = 1000;
  s.time_us = 0;  // nothing to scale by
  EXPECT_DOUBLE_EQ(fastest_iteration_busbw(s), 0.5);
}

}  // namespace
}  // namespace fabkit::slurm
