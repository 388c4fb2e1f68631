// The planner (slurm/planner.h) and its coverage (slurm/plan_coverage.h): the plan fits the
// budget, pairs every node twice, loads every leaf<->spine path twice each way where that fits,
// picks all pairs when they fit, and every schedule it makes is valid.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

#include "common/errors.h"
#include "slurm/plan_search.h"
#include "slurm/planner.h"
#include "slurm/search_cost.h"

namespace fabkit::slurm {
namespace {

// leaves x per_leaf nodes, leaf-major host order; spines above every leaf.
FabricTopology fat_tree(int leaves, int per_leaf, int spines) {
  FabricTopology t;
  t.nodes = leaves * per_leaf;
  for (int l = 0; l < leaves; ++l) t.leaf_names.push_back("leaf" + std::to_string(l + 1));
  for (int i = 0; i < t.nodes; ++i) t.leaf_of.push_back(i / per_leaf);
  t.spines = spines;
  return t;
}

PlanInput input(int nodes, double budget_s, int max_parallel) {
  PlanInput in;
  in.nodes = nodes;
  in.budget_s = budget_s;
  in.per_pair_s = 6.0;
  in.max_parallel = max_parallel;
  return in;
}

bool has_note(const PlanCoverage& c, const std::string& needle) {
  return std::any_of(c.notes.begin(), c.notes.end(),
                     [&](const std::string& n) { return n.find(needle) != std::string::npos; });
}

// What every plan must hold, whatever it chose.
void expect_sound(const ClusterPlan& p, int nodes) {
  EXPECT_EQ(check_schedule(p.rounds, nodes), "");
  EXPECT_EQ(p.coverage.nodes, nodes);
  int64_t pairs = 0;
  for (const auto& r : p.rounds) pairs += static_cast<int64_t>(r.pairs.size());
  EXPECT_EQ(p.coverage.pairs_measured, pairs);
  EXPECT_DOUBLE_EQ(p.estimated_s, p.cost.seconds + p.search_reserve_s);
  EXPECT_EQ(p.fits_budget, p.estimated_s <= p.budget_s);
}

TEST(Planner, ChoosesAllPairsWhenTheyFitTheBudget) {
  ClusterPlan p = plan_cluster(input(8, 600, 32));
  expect_sound(p, 8);
  EXPECT_EQ(p.strategy, PlanStrategy::kAllPairs);
  EXPECT_EQ(p.cost.rounds, 7);
  EXPECT_EQ(p.coverage.pairs_measured, 28);
  EXPECT_DOUBLE_EQ(p.cost.seconds, 42.0);
  EXPECT_TRUE(p.fits_budget);
  EXPECT_FALSE(has_note(p.coverage, "not measured"));
  EXPECT_NE(p.why.find("fits"), std::string::npos) << p.why;
}

TEST(Planner, FitsTheBudgetAndPairsEveryNodeTwiceWithoutATopology) {
  // 64 nodes in 2 minutes (all pairs would take 378 s), 1024 and 4096 in 10 minutes.
  for (auto [n, budget, par] : {std::tuple{64, 120.0, 32}, std::tuple{1024, 600.0, 32},
                                std::tuple{1024, 600.0, 0}, std::tuple{4096, 600.0, 0}}) {
    SCOPED_TRACE("N = " + std::to_string(n) + ", max_parallel " + std::to_string(par));
    ClusterPlan p = plan_cluster(input(n, budget, par));
    expect_sound(p, n);
    EXPECT_NE(p.strategy, PlanStrategy::kAllPairs);
    EXPECT_TRUE(p.fits_budget) << p.estimated_s;
    EXPECT_GE(p.coverage.min_pairs_per_node, 2);
    EXPECT_EQ(p.coverage.nodes_under_2, 0);
    EXPECT_EQ(p.shifts.front(), 1);  // the ring first
    // The greedy stops only when no further shift fits: none of the small ones left would.
    for (int s = 2; s <= std::min(n / 2, 40); ++s) {
      if (std::count(p.shifts.begin(), p.shifts.end(), s)) continue;
      auto c = schedule_cost(shift_rounds(p.order, s), n, 6.0, par > 0 ? par : n);
      EXPECT_GT(p.estimated_s + c.seconds, budget) << "shift " << s << " would still fit";
    }
    EXPECT_TRUE(has_note(p.coverage, "found only by the bad-link search"));
    EXPECT_TRUE(has_note(p.coverage, "topology unknown"));
  }
}

TEST(Planner, LoadsEveryLeafSpinePathTwiceEachWayWhenItFits) {
  // 32 leaves of 32 nodes under 16 spines (1024 nodes), and 128 leaves (4096 nodes).
  for (auto [leaves, par] : {std::pair{32, 32}, std::pair{32, 0}, std::pair{128, 0}}) {
    SCOPED_TRACE(std::to_string(leaves) + " leaves, max_parallel " + std::to_string(par));
    const int n = leaves * 32;
    PlanInput in = input(n, 600, par);
    in.topology = fat_tree(leaves, 32, 16);
    ClusterPlan p = plan_cluster(in);
    expect_sound(p, n);
    EXPECT_TRUE(p.fits_budget);
    EXPECT_GE(p.coverage.min_pairs_per_node, 2);
    EXPECT_EQ(p.coverage.topology, "leaves+spines");
    EXPECT_EQ(p.coverage.paths, leaves * 16 * 2);
    EXPECT_EQ(p.coverage.paths_under_2, 0);
    auto loads = leaf_spine_loads(p.rounds, in.topology);
    EXPECT_GE(*std::min_element(loads.begin(), loads.end()), 2);
    EXPECT_TRUE(has_note(p.coverage, "destination-based routing"));
    // With every round at once there is room to meet every pair of leaves as well.
    if (par == 0) {
      EXPECT_EQ(p.coverage.leaf_pairs_met, p.coverage.leaf_pairs);
    }
  }
}

TEST(Planner, OneShiftAfterTheRingIsChosenForTheSpinePaths) {
  // Room for the ring (32 waves) and one shift (32-33 waves) only: the ring alone loads almost
  // no leaf<->spine path (its pairs stay inside a leaf), so the one shift must load them all.
  PlanInput in = input(1024, 66 * 6.0, 32);
  in.topology = fat_tree(32, 32, 16);
  in.per_pair_s = 6.0;
  PlanInput ring_only = in;
  ring_only.pairs = PairPlan::kRing;
  ClusterPlan ring = plan_cluster(ring_only);
  EXPECT_GT(ring.coverage.paths_under_2, 900);
  ClusterPlan p = plan_cluster(in);
  expect_sound(p, 1024);
  ASSERT_EQ(p.shifts.size(), 2u);
  EXPECT_EQ(p.coverage.paths_under_2, 0);
}

TEST(Planner, FirstShiftLoadsTheMostSpinePathsOfAnyThatFits) {
  // 16 leaves of 16 nodes in a random order under 16 spines: no single shift loads every path
  // twice, and shifts differ in how many they load. With room for the ring and one shift, the
  // planner's shift must leave no more paths under 2 loads than the best shift would.
  FabricTopology t = fat_tree(16, 16, 16);
  std::shuffle(t.leaf_of.begin(), t.leaf_of.end(), std::mt19937(11));
  PlanInput in = input(256, 4 * 6.0, 0);  // ring 2 waves + one shift 2 waves
  in.topology = t;
  ClusterPlan p = plan_cluster(in);
  expect_sound(p, 256);
  ASSERT_EQ(p.shifts.size(), 2u);
  auto under_2 = [&](int s) {
    auto rounds = shift_rounds(p.order, 1);
    for (auto& r : shift_rounds(p.order, s)) rounds.push_back(r);
    return plan_coverage(rounds, t).paths_under_2;
  };
  int best = under_2(2), worst = best;
  for (int s = 3; s <= 128; ++s) {
    best = std::min(best, under_2(s));
    worst = std::max(worst, under_2(s));
  }
  EXPECT_GT(worst, best);  // the choice matters here
  EXPECT_EQ(p.coverage.paths_under_2, best);
}

TEST(Planner, RingFollowsTheLeavesWhenHostsAreShuffled) {
  FabricTopology t = fat_tree(8, 16, 4);
  // The same leaves, hosts given in a shuffled order.
  std::vector<int> perm(128);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(7));
  FabricTopology shuffled = t;
  for (int i = 0; i < 128; ++i)
    shuffled.leaf_of[static_cast<size_t>(i)] =
        t.leaf_of[static_cast<size_t>(perm[static_cast<size_t>(i)])];
  PlanInput in = input(128, 600, 0);
  in.topology = shuffled;
  in.pairs = PairPlan::kRing;
  ClusterPlan p = plan_cluster(in);
  expect_sound(p, 128);
  EXPECT_EQ(p.strategy, PlanStrategy::kRing);
  int crossing = 0;
  for (const auto& r : p.rounds)
    for (const auto& pr : r.pairs) crossing += shuffled.leaf(pr.a) != shuffled.leaf(pr.b);
  EXPECT_EQ(crossing, 8);  // one link from each leaf to the next, around the ring
}

TEST(Planner, CoverageNamesWhatARingOnlyPlanLeavesOut) {
  PlanInput in = input(1024, 200, 32);  // the ring (192 s) and nothing more
  in.topology = fat_tree(32, 32, 16);
  ClusterPlan p = plan_cluster(in);
  expect_sound(p, 1024);
  EXPECT_EQ(p.strategy, PlanStrategy::kRing);
  EXPECT_GT(p.coverage.paths_under_2, 0);
  ASSERT_EQ(p.coverage.paths_under_2_first.size(), kCoverageListed);
  EXPECT_EQ(p.coverage.paths_under_2_first[0].leaf_name, "leaf1");
  EXPECT_TRUE(has_note(p.coverage, "loaded fewer than 2 times (leaf1 -> spine"));
  EXPECT_EQ(p.coverage.leaf_pairs, 32 * 31 / 2);
  EXPECT_EQ(p.coverage.leaf_pairs_met, 32);  // the ring meets each leaf's next one
  EXPECT_TRUE(has_note(p.coverage, "pairs of leaves have no pair run between them"));
}

TEST(Planner, RingOverTheBudgetStillRunsAndSaysSo) {
  ClusterPlan p = plan_cluster(input(4096, 600, 32));  // the ring alone: 128 waves, 768 s
  expect_sound(p, 4096);
  EXPECT_EQ(p.strategy, PlanStrategy::kRing);
  EXPECT_FALSE(p.fits_budget);
  EXPECT_DOUBLE_EQ(p.cost.seconds, 768.0);
  EXPECT_NE(p.why.find("raise --budget or --max-parallel"), std::string::npos) << p.why;
}

TEST(Planner, SearchReserveComesOutOfTheBudget) {
  PlanInput in = input(1024, 600, 32);
  ClusterPlan without = plan_cluster(in);
  in.search_reserve_s = 200;
  ClusterPlan with = plan_cluster(in);
  expect_sound(with, 1024);
  EXPECT_LT(with.shifts.size(), without.shifts.size());
  EXPECT_TRUE(with.fits_budget);
  EXPECT_DOUBLE_EQ(with.estimated_s, with.cost.seconds + 200);
  EXPECT_NE(with.why.find("kept for the bad-link search"), std::string::npos) << with.why;
}

TEST(Planner, PairsAllAndRingAreHonoured) {
  PlanInput in = input(1024, 600, 32);
  in.pairs = PairPlan::kAll;
  ClusterPlan all = plan_cluster(in);
  expect_sound(all, 1024);
  EXPECT_EQ(all.strategy, PlanStrategy::kAllPairs);
  EXPECT_EQ(all.cost.waves, 16368);  // docs/cluster.md: 27 h at 6 s
  EXPECT_DOUBLE_EQ(all.cost.seconds, 98208.0);
  EXPECT_FALSE(all.fits_budget);
  EXPECT_EQ(all.coverage.pairs_measured, all.coverage.pairs_total);
  in.pairs = PairPlan::kRing;
  ClusterPlan ring = plan_cluster(in);
  EXPECT_EQ(ring.strategy, PlanStrategy::kRing);
  // Without a topology the ring is the old --pairs ring, round for round.
  EXPECT_EQ(ring.rounds.size(), ring_rounds(1024).size());
  for (size_t r = 0; r < ring.rounds.size(); ++r)
    EXPECT_EQ(ring.rounds[r].pairs, ring_rounds(1024)[r].pairs);
}

TEST(Planner, ShiftsPackIntoTwoOrThreeDisjointRoundsAndTogetherAreEveryPair) {
  for (int n = 2; n <= 41; ++n) {
    std::vector<int> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::reverse(order.begin(), order.end());
    std::vector<Round> all;
    for (int s = 1; 2 * s <= n; ++s) {
      auto rounds = shift_rounds(order, s);
      EXPECT_EQ(check_schedule(rounds, n), "") << "N " << n << " s " << s;
      EXPECT_LE(rounds.size(), 3u);
      size_t pairs = 0;
      for (const auto& r : rounds) pairs += r.pairs.size();
      EXPECT_EQ(pairs, static_cast<size_t>(2 * s == n ? n / 2 : n)) << "N " << n << " s " << s;
      all.insert(all.end(), rounds.begin(), rounds.end());
    }
    EXPECT_EQ(check_schedule(all, n), "") << "N " << n;  // no pair twice across shifts
    size_t total = 0;
    for (const auto& r : all) total += r.pairs.size();
    EXPECT_EQ(total, static_cast<size_t>(n * (n - 1) / 2)) << "N " << n;
  }
}

TEST(Planner, AllPairsCostMatchesTheTournament) {
  for (int n = 2; n <= 40; ++n)
    for (int cap : {0, 1, 3, 32}) {
      auto built = schedule_cost(round_robin(n), n, 2.5, cap > 0 ? cap : n);
      auto formula = all_pairs_cost(n, 2.5, cap);
      EXPECT_EQ(formula.rounds, built.rounds) << n;
      EXPECT_EQ(formula.waves, built.waves) << n << " cap " << cap;
      EXPECT_EQ(formula.pair_runs, built.pair_runs) << n;
      EXPECT_DOUBLE_EQ(formula.seconds, built.seconds) << n;
    }
}

TEST(Planner, EveryPlanIsAValidScheduleAtEverySmallSize) {
  for (int n = 2; n <= 40; ++n)
    for (double budget : {1.0, 30.0, 100.0, 1000.0}) {
      PlanInput in = input(n, budget, 4);
      if (n % 4 == 0) in.topology = fat_tree(4, n / 4, 2);
      ClusterPlan p = plan_cluster(in);
      SCOPED_TRACE("N " + std::to_string(n) + " budget " + std::to_string(budget));
      expect_sound(p, n);
      if (n >= 3) {
        EXPECT_GE(p.coverage.min_pairs_per_node, 2);
      }
    }
}

TEST(PlanCoverage, SaysWhenSpinesAreUnknown) {
  FabricTopology t = fat_tree(4, 4, 0);
  PlanCoverage c = plan_coverage(ring_rounds(16), t);
  EXPECT_EQ(c.topology, "leaves");
  EXPECT_EQ(c.paths, 0);
  EXPECT_TRUE(has_note(c, "spines unknown: leaf<->spine coverage not judged"));
  EXPECT_EQ(c.leaf_pairs, 6);
  EXPECT_EQ(c.leaf_pairs_met, 4);  // the ring around 4 leaves
  EXPECT_EQ(c.min_pairs_per_node, 2);
  EXPECT_DOUBLE_EQ(c.median_pairs_per_node, 2.0);
  t.rails = 4;
  EXPECT_TRUE(has_note(plan_coverage(ring_rounds(16), t), "all 4 rails"));
}

TEST(PlanCoverage, CountsBothDirectionsOfAPairRun) {
  // Two leaves of two nodes, two spines: n0 (leaf 0) with n3 (leaf 1). n0 -> n3 crosses spine
  // 3 % 2 = 1, n3 -> n0 spine 0: four paths loaded once each.
  FabricTopology t = fat_tree(2, 2, 2);
  std::vector<Round> rounds{Round{{{0, 3}}, {}}};
  auto loads = leaf_spine_loads(rounds, t);
  // up: leaf0/s0, leaf0/s1, leaf1/s0, leaf1/s1; then down in the same order.
  EXPECT_EQ(loads, (std::vector<int>{0, 1, 1, 0, 1, 0, 0, 1}));
  PlanCoverage c = plan_coverage(rounds, t);
  EXPECT_EQ(c.paths_under_2, 8);
  EXPECT_EQ(c.nodes_under_2, 4);
  EXPECT_TRUE(has_note(c, "4 nodes are in fewer than 2 pairs"));
}

TEST(PlanBudget, ParsesDurationsAndRefusesTheRest) {
  EXPECT_DOUBLE_EQ(parse_budget_s("10m"), 600);
  EXPECT_DOUBLE_EQ(parse_budget_s("600s"), 600);
  EXPECT_DOUBLE_EQ(parse_budget_s("90"), 90);
  EXPECT_DOUBLE_EQ(parse_budget_s("1h"), 3600);
  EXPECT_DOUBLE_EQ(parse_budget_s("1.5h"), 5400);
  for (const char* bad : {"", "10x", "m", "-5", "0", "10 m", "1e999", "ten"}) {
    try {
      parse_budget_s(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--budget '") + bad + "'"),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("--budget 10m"), std::string::npos) << e.what();
    }
  }
}

TEST(PairPlan, AutoParsesAndCannotBeScheduledWithoutThePlanner) {
  EXPECT_EQ(pair_plan_from_string("auto"), PairPlan::kAuto);
  EXPECT_STREQ(to_string(PairPlan::kAuto), "auto");
  EXPECT_THROW(make_schedule(PairPlan::kAuto, 4), InternalError);
}

TEST(PlanWithSearch, TheSearchIsPlannedOnlyWhenThePlanLeavesPairsOrWhenForced) {
  PlanInput in;
  in.nodes = 16;  // every pair fits 10 minutes at 3 s a wave
  const SearchPolicy policy;
  const double fraction = 0.25;
  // The estimate is the cost model's at its default figures, the policy run with the plan's
  // parallelism and a fault's tests priced at the bar's fraction.
  auto estimate = [&](int nodes) {
    SearchPolicy p = policy;
    p.max_parallel = in.max_parallel;
    RingCostModel m;
    m.fault_bandwidth_fraction = fraction;
    return search_cost_s(nodes, p, m);
  };
  PlanWithSearch small = plan_with_search(in, SearchMode::kAuto, policy, fraction);
  EXPECT_FALSE(small.search_planned);
  EXPECT_EQ(small.trigger, "");
  EXPECT_EQ(small.plan.search_reserve_s, 0);
  EXPECT_DOUBLE_EQ(small.search_estimate_s, estimate(16));  // said even when not planned
  EXPECT_EQ(small.plan.coverage.pairs_measured, small.plan.coverage.pairs_total);
  PlanWithSearch forced = plan_with_search(in, SearchMode::kForce, policy, fraction);
  EXPECT_TRUE(forced.search_planned);
  EXPECT_EQ(forced.trigger, "--search");
  EXPECT_GT(forced.plan.search_reserve_s, 0);
  EXPECT_DOUBLE_EQ(forced.plan.search_reserve_s, estimate(16));

  in.nodes = 1024;  // all pairs: 1023 waves, far over the budget
  PlanWithSearch big = plan_with_search(in, SearchMode::kAuto, policy, fraction);
  ASSERT_TRUE(big.search_planned);
  EXPECT_DOUBLE_EQ(big.plan.search_reserve_s, estimate(1024));
  EXPECT_LE(big.plan.estimated_s, in.budget_s);  // pair rounds + the search's estimate
  EXPECT_LT(big.plan.coverage.pairs_measured, big.plan.coverage.pairs_total);
  EXPECT_EQ(
      big.trigger.rfind("the plan measures " + std::to_string(big.plan.coverage.pairs_measured) +
                            " of 523776 pairs",
                        0),
      0u)
      << big.trigger;
  // A lower bar prices a fault's tests slower: more is kept out of the budget.
  EXPECT_GT(plan_with_search(in, SearchMode::kAuto, policy, 0.05).plan.search_reserve_s,
            big.plan.search_reserve_s);
  PlanWithSearch off = plan_with_search(in, SearchMode::kOff, policy, fraction);
  EXPECT_FALSE(off.search_planned);
  EXPECT_EQ(off.plan.search_reserve_s, 0);
  EXPECT_GT(off.plan.cost.seconds, big.plan.cost.seconds);  // the whole budget for pair rounds
  // A given reserve is replaced: the search's own estimate decides.
  in.search_reserve_s = 999;
  EXPECT_EQ(plan_with_search(in, SearchMode::kOff, policy, fraction).plan.search_reserve_s, 0);
  EXPECT_DOUBLE_EQ(plan_with_search(in, SearchMode::kAuto, policy, fraction).plan.search_reserve_s,
                   estimate(1024));
}

}  // namespace
}  // namespace fabkit::slurm
