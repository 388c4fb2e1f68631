#include "slurm/schedule.h"

#include <gtest/gtest.h>

#include <set>

#include "common/errors.h"

namespace fabkit::slurm {
namespace {

// Every unordered pair of nodes appears exactly once; every round is disjoint.
void expect_complete_tournament(int nodes) {
  auto rounds = round_robin(nodes);
  SCOPED_TRACE("nodes=" + std::to_string(nodes));
  EXPECT_EQ(check_schedule(rounds, nodes), "");
  EXPECT_EQ(static_cast<int>(rounds.size()), nodes % 2 == 0 ? nodes - 1 : nodes);
  std::set<std::pair<int, int>> pairs;
  for (const auto& r : rounds) {
    EXPECT_EQ(static_cast<int>(r.pairs.size()), nodes / 2);
    EXPECT_EQ(static_cast<int>(r.idle.size()), nodes % 2);
    for (const auto& p : r.pairs) pairs.insert({p.a, p.b});
  }
  EXPECT_EQ(static_cast<long>(pairs.size()), static_cast<long>(nodes) * (nodes - 1) / 2);
}

TEST(RoundRobin, SmallCounts) {
  EXPECT_TRUE(round_robin(0).empty());
  EXPECT_TRUE(round_robin(1).empty());
  auto two = round_robin(2);
  ASSERT_EQ(two.size(), 1u);
  EXPECT_EQ(two[0].pairs, (std::vector<NodePair>{{0, 1}}));
  for (int n = 3; n <= 17; ++n) expect_complete_tournament(n);
}

TEST(RoundRobin, OddCountGivesEveryNodeOneBye) {
  auto rounds = round_robin(7);
  std::multiset<int> byes;
  for (const auto& r : rounds) byes.insert(r.idle.begin(), r.idle.end());
  for (int i = 0; i < 7; ++i) EXPECT_EQ(byes.count(i), 1u) << i;
}

// The simulated 1024-node allocation of issue #13: 1023 rounds of 512 disjoint pairs, all
// 523,776 pairs exactly once, instead of 523,776 sequential pair runs.
TEST(RoundRobin, Simulated1024Nodes) {
  const int n = 1024;
  auto rounds = round_robin(n);
  ASSERT_EQ(rounds.size(), 1023u);
  std::vector<std::vector<bool>> met(n, std::vector<bool>(n, false));
  long total = 0;
  for (const auto& r : rounds) {
    ASSERT_EQ(r.pairs.size(), 512u);
    std::vector<bool> busy(n, false);
    for (const auto& p : r.pairs) {
      ASSERT_TRUE(p.a >= 0 && p.a < p.b && p.b < n);
      ASSERT_FALSE(busy[p.a] || busy[p.b]) << "node twice in a round";
      busy[p.a] = busy[p.b] = true;
      ASSERT_FALSE(met[p.a][p.b]) << "pair twice: " << p.a << "," << p.b;
      met[p.a][p.b] = true;
      ++total;
    }
  }
  EXPECT_EQ(total, 1024L * 1023 / 2);
  EXPECT_EQ(check_schedule(rounds, n), "");
  auto c = schedule_cost(rounds, n, 10.0, 512);
  EXPECT_EQ(c.rounds, 1023);
  EXPECT_EQ(c.waves, 1023);
  EXPECT_EQ(c.pair_runs, 523776);
  EXPECT_EQ(c.sequential_runs, 523776);
  EXPECT_DOUBLE_EQ(c.seconds, 10230.0);
  // The ring plan: 1024 links in 2 rounds of 512.
  auto ring = ring_rounds(n);
  ASSERT_EQ(ring.size(), 2u);
  EXPECT_EQ(check_schedule(ring, n), "");
  EXPECT_EQ(schedule_cost(ring, n, 10.0, 512).pair_runs, 1024);
  EXPECT_DOUBLE_EQ(schedule_cost(ring, n, 10.0, 512).seconds, 20.0);
}

TEST(Ring, NeighboursOnlyInTwoOrThreeRounds) {
  for (int n = 2; n <= 12; ++n) {
    SCOPED_TRACE(n);
    auto rounds = ring_rounds(n);
    EXPECT_EQ(check_schedule(rounds, n), "");
    std::set<std::pair<int, int>> pairs;
    for (const auto& r : rounds)
      for (const auto& p : r.pairs) pairs.insert({p.a, p.b});
    std::set<std::pair<int, int>> want;
    for (int i = 0; i < n; ++i) want.insert({std::min(i, (i + 1) % n), std::max(i, (i + 1) % n)});
    EXPECT_EQ(pairs, want);
    EXPECT_EQ(rounds.size(), n == 2 ? 1u : (n % 2 == 0 ? 2u : 3u));
  }
}

TEST(ScheduleCost, WavesSplitWideRounds) {
  auto rounds = round_robin(64);  // 63 rounds of 32 pairs
  auto c = schedule_cost(rounds, 64, 6.0, 16);
  EXPECT_EQ(c.waves, 63 * 2);
  EXPECT_DOUBLE_EQ(c.seconds, 63 * 2 * 6.0);
  EXPECT_EQ(c.sequential_runs, 2016);
}

TEST(CheckSchedule, NamesTheViolation) {
  std::vector<Round> r{{{{0, 1}, {1, 2}}, {}}};
  EXPECT_NE(check_schedule(r, 3).find("two pairs of the round"), std::string::npos);
  std::vector<Round> twice{{{{0, 1}}, {}}, {{{0, 1}}, {}}};
  EXPECT_NE(check_schedule(twice, 2).find("already measured"), std::string::npos);
  std::vector<Round> range{{{{0, 5}}, {}}};
  EXPECT_NE(check_schedule(range, 3).find("not 0 <= a < b"), std::string::npos);
}

TEST(DisjointRounds, PacksFlaggedLinksGreedily) {
  auto r = disjoint_rounds({{0, 1}, {1, 2}, {3, 4}, {0, 2}, {5, 6}});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].pairs, (std::vector<NodePair>{{0, 1}, {3, 4}, {5, 6}}));
  EXPECT_EQ(r[1].pairs, (std::vector<NodePair>{{1, 2}}));
  EXPECT_EQ(r[2].pairs, (std::vector<NodePair>{{0, 2}}));
  EXPECT_EQ(check_schedule(r, 7), "");
  EXPECT_TRUE(disjoint_rounds({}).empty());
}

TEST(PairPlan, ParsesAndRefuses) {
  EXPECT_EQ(pair_plan_from_string("ring"), PairPlan::kRing);
  EXPECT_EQ(pair_plan_from_string("all"), PairPlan::kAll);
  try {
    pair_plan_from_string("mesh");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'mesh'"), std::string::npos);
  }
}

}  // namespace
}  // namespace fabkit::slurm
