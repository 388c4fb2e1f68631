#include "slurm/fabric_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <tuple>

namespace fabkit::slurm {
namespace {

// A simulated fabric: positive when the group holds both ends of a bad link, a bad node and any
// other node, or both ends of a flaky link and the seeded draw says it showed this time. Checks
// that the groups of a round are disjoint (they run at once on real nodes).
class Fabric : public GroupTester {
 public:
  Fabric(int nodes, unsigned seed) : nodes_(nodes), rng_(seed) {}
  std::vector<NodePair> bad, flaky;
  std::vector<int> bad_nodes;
  double p_show = 0.7;
  int rounds = 0;
  // A node behind a bad spine cable (-1: none): slow with every node off its leaf of leaf_size.
  int behind_cable = -1, leaf_size = 1;

  std::vector<bool> run_round(const std::vector<std::vector<int>>& groups) override {
    ++rounds;
    std::vector<bool> busy(static_cast<size_t>(nodes_), false), out;
    for (const auto& g : groups) {
      std::set<int> in;
      for (int x : g) {
        EXPECT_TRUE(x >= 0 && x < nodes_);
        EXPECT_FALSE(busy[static_cast<size_t>(x)]) << "node " << x << " in two groups of a round";
        busy[static_cast<size_t>(x)] = true;
        in.insert(x);
      }
      bool pos = false;
      for (const auto& l : bad) pos = pos || (in.count(l.a) && in.count(l.b));
      for (int b : bad_nodes) pos = pos || (in.count(b) && in.size() >= 2);
      if (in.count(behind_cable))
        for (int x : in) pos = pos || x / leaf_size != behind_cable / leaf_size;
      std::uniform_real_distribution<double> u(0, 1);
      for (const auto& l : flaky)
        if (in.count(l.a) && in.count(l.b) && u(rng_) < p_show) pos = true;
      out.push_back(pos);
    }
    return out;
  }

 private:
  int nodes_;
  std::mt19937 rng_;
};

std::vector<int> iota(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

NodePair random_pair(std::mt19937& rng, int n, const std::vector<NodePair>& not_these = {}) {
  std::uniform_int_distribution<int> pick(0, n - 1);
  while (true) {
    int x = pick(rng), y = pick(rng);
    NodePair p{std::min(x, y), std::max(x, y)};
    if (x != y && std::find(not_these.begin(), not_these.end(), p) == not_these.end()) return p;
  }
}

SearchPolicy policy_with_blocks(int blocks) {
  SearchPolicy p;
  p.blocks = blocks;
  return p;
}

using Named = std::set<std::tuple<std::string, int, int>>;

// What the search named, as (kind, a, b) for links and (node, x, x) for nodes.
Named named(const FabricSearchResult& r) {
  Named out;
  for (const auto& f : r.faults)
    out.insert(
        {f.kind, f.kind == "node" ? f.node : f.pair.a, f.kind == "node" ? f.node : f.pair.b});
  return out;
}

Named link(NodePair p, const char* kind = "link") { return {{kind, p.a, p.b}}; }

// The sizes and blocks of the issue: 1024 nodes (100 seeds) and 4096 (fewer: the same code), each
// with the first stage in blocks and as one group.
struct Scale {
  int n, blocks, seeds;
};
// 512 and 2048 blocks (of two) are the cost model's choice with its measured figures
// (bench/search_cost/search_cost_table).
const Scale kScales[] = {{1024, 16, 100}, {1024, 1, 20}, {1024, 512, 10},
                         {4096, 32, 10},  {4096, 1, 5},  {4096, 2048, 2}};

TEST(FabricSearch, OneBadLinkIsNamedAloneWithinTheBound) {
  for (const auto& sc : kScales)
    for (int seed = 0; seed < sc.seeds; ++seed) {
      std::mt19937 rng(static_cast<unsigned>(seed));
      Fabric f(sc.n, static_cast<unsigned>(seed));
      f.bad = {random_pair(rng, sc.n)};
      auto r = search_fabric(iota(sc.n), f, policy_with_blocks(sc.blocks));
      ASSERT_EQ(r.outcome, "found") << sc.n << "/" << sc.blocks << " seed " << seed;
      EXPECT_EQ(named(r), link(f.bad[0])) << sc.n << "/" << sc.blocks << " seed " << seed;
      EXPECT_EQ(r.faults[0].positives, 3);
      EXPECT_EQ(r.rounds, f.rounds);
      EXPECT_LE(r.rounds, r.bound) << sc.n << "/" << sc.blocks << " seed " << seed;
      EXPECT_FALSE(r.stopped_at_cap);
      if (std::getenv("FABRIC_SEARCH_ROUNDS"))  // the figures docs/cluster.md quotes
        std::fprintf(stderr, "n %d blocks %d: %d rounds of bound %d\n", sc.n, sc.blocks, r.rounds,
                     r.bound);
    }
}

TEST(FabricSearch, TwoBadLinksAreBothNamedEvenSharingANode) {
  for (const auto& sc : kScales)
    for (int seed = 0; seed < sc.seeds; ++seed) {
      std::mt19937 rng(static_cast<unsigned>(1000 + seed));
      Fabric f(sc.n, static_cast<unsigned>(seed));
      NodePair first = random_pair(rng, sc.n);
      // Every third seed: the second link shares a node with the first (one end taken out must
      // not hide the other link at that end).
      NodePair second = random_pair(rng, sc.n, {first});
      if (seed % 3 == 0) {
        int other = (first.b + 1 + seed) % sc.n;
        if (other == first.a || other == first.b) other = (other + 2) % sc.n;
        second = {std::min(first.a, other), std::max(first.a, other)};
      }
      f.bad = {first, second};
      auto r = search_fabric(iota(sc.n), f, policy_with_blocks(sc.blocks));
      EXPECT_EQ(named(r), (Named{{"link", first.a, first.b}, {"link", second.a, second.b}}))
          << sc.n << "/" << sc.blocks << " seed " << seed;
      EXPECT_LE(r.rounds, r.bound);
    }
}

// Two links at one node, every way on 12 nodes: the shared end's node test must use a node it was
// known fast with, not just any healthy node (the other link's far end is healthy as a node, and
// the end would then be slow with it and named a bad node).
TEST(FabricSearch, TwoLinksAtOneNodeAreTwoLinksNotABadNode) {
  const int n = 12;
  for (int blocks : {1, 3})
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b)
        for (int c = b + 1; c < n; ++c) {
          if (b == a || c == a) continue;
          Fabric f(n, 1);
          f.bad = {{std::min(a, b), std::max(a, b)}, {std::min(a, c), std::max(a, c)}};
          auto r = search_fabric(iota(n), f, policy_with_blocks(blocks));
          EXPECT_EQ(named(r),
                    (Named{{"link", f.bad[0].a, f.bad[0].b}, {"link", f.bad[1].a, f.bad[1].b}}))
              << blocks << ": " << a << "-" << b << ", " << a << "-" << c;
        }
}

TEST(FabricSearch, ABadNodeIsNamedAsANodeAndItsPartnerIsNotBlamed) {
  for (const auto& sc : kScales)
    for (int seed = 0; seed < sc.seeds; ++seed) {
      std::mt19937 rng(static_cast<unsigned>(2000 + seed));
      Fabric f(sc.n, static_cast<unsigned>(seed));
      int node = std::uniform_int_distribution<int>(0, sc.n - 1)(rng);
      f.bad_nodes = {node};
      auto r = search_fabric(iota(sc.n), f, policy_with_blocks(sc.blocks));
      EXPECT_EQ(named(r), (Named{{"node", node, node}}))
          << sc.n << "/" << sc.blocks << " seed " << seed;
      EXPECT_EQ(r.outcome, "found");
      EXPECT_LE(r.rounds, r.bound);
    }
}

// A node whose traffic from the other leaves crosses a bad leaf<->spine cable (the cable down to
// its leaf, for the destinations routed through that spine) is slow with every node off its leaf
// and fast on it. With the leaves known its node test takes a partner on its own leaf, so it is
// never a bad node (fabric_sim_test's bad spine port, seed 4, is the case where a partner off the
// leaf made it one).
TEST(FabricSearch, ANodeBehindABadSpineCableIsNotABadNodeWhenTheLeavesAreKnown) {
  const int n = 16;
  SearchPolicy p = policy_with_blocks(1);
  for (int i = 0; i < n; ++i) p.leaf_of.push_back(i / 8);
  Fabric g(n, 1);
  g.leaf_size = 8;
  g.behind_cable = 12;  // on leaf 1, slow with all of leaf 0
  auto r = search_fabric(iota(n), g, p);
  EXPECT_EQ(r.outcome, "found");
  for (const auto& x : r.faults) {
    EXPECT_NE(x.kind, "node") << x.node;
    // Each pair named crosses the two leaves through node 12: what the path judge explains.
    EXPECT_TRUE(x.pair.a == 12 || x.pair.b == 12) << x.pair.a << "-" << x.pair.b;
  }
}

TEST(FabricSearch, ACleanFabricCostsTheFirstStageOnly) {
  for (const auto& sc : kScales) {
    Fabric f(sc.n, 1);
    auto r = search_fabric(iota(sc.n), f, policy_with_blocks(sc.blocks));
    EXPECT_EQ(r.outcome, "none");
    EXPECT_TRUE(r.faults.empty());
    EXPECT_EQ(r.blocks, sc.blocks);
    // One round of blocks, then the tournament of the blocks (g - 1 rounds for g even).
    EXPECT_EQ(r.rounds, sc.blocks == 1 ? 1 : sc.blocks);
    EXPECT_EQ(r.rounds, f.rounds);
  }
}

// A link that shows in 7 of 10 tests: it is named, as flaky or, when it happened to show in all
// three of its own tests (the first ended the bisection: p^2 = 0.49), as bad; no healthy pair is
// ever named as a link, a flaky link or a node (a pair that a misled bisection narrowed to is at
// most "not reproduced", positive in none of its tests).
TEST(FabricSearch, AFlakyLinkIsToldFromABadOneAndNoHealthyPairIsBlamed) {
  int named_flaky = 0, named_bad = 0, runs = 0;
  for (const auto& sc : kScales)
    for (int seed = 0; seed < sc.seeds; ++seed) {
      ++runs;
      std::mt19937 rng(static_cast<unsigned>(3000 + seed));
      Fabric f(sc.n, static_cast<unsigned>(seed));
      f.flaky = {random_pair(rng, sc.n)};
      auto r = search_fabric(iota(sc.n), f, policy_with_blocks(sc.blocks));
      for (const auto& x : r.faults) {
        if (x.kind == "not_reproduced") {
          EXPECT_EQ(x.positives, 0);
          continue;
        }
        ASSERT_NE(x.kind, "node") << seed;
        EXPECT_EQ(x.pair, f.flaky[0]) << x.kind << " " << x.pair.a << "," << x.pair.b;
        named_flaky += x.kind == "flaky_link";
        named_bad += x.kind == "link";
        EXPECT_EQ(x.kind == "link", x.positives == x.repeats);
      }
      EXPECT_LE(r.rounds, r.bound);
    }
  // The first stage misses it in 3 of 10 runs (its one group holding the pair was clean), and
  // the bisection after it can still be misled: named in about half the runs (72 of 135 when
  // written). Flaky vs bad: 1 - p^2 = 0.51 of those named are flaky (binomial, sd ~0.06).
  const int found = named_flaky + named_bad;
  EXPECT_GE(found, runs * 2 / 5) << named_flaky << " + " << named_bad;
  EXPECT_GT(named_flaky, found * 3 / 10) << named_flaky << " of " << found;
  EXPECT_LT(named_flaky, found * 3 / 4) << named_flaky << " of " << found;
}

TEST(FabricSearch, TheCapStopsTheSearchAndSaysSo) {
  const int n = 256;
  Fabric f(n, 7);
  std::mt19937 rng(7);
  for (int i = 0; i < 6; ++i) f.bad.push_back(random_pair(rng, n, f.bad));
  SearchPolicy p = policy_with_blocks(8);
  p.max_links = 4;
  auto r = search_fabric(iota(n), f, p);
  EXPECT_TRUE(r.stopped_at_cap);
  ASSERT_EQ(r.faults.size(), 4u);
  for (const auto& x : r.faults) {
    EXPECT_EQ(x.kind, "link");
    EXPECT_NE(std::find(f.bad.begin(), f.bad.end(), x.pair), f.bad.end());
  }
  EXPECT_LE(r.rounds, r.bound);
}

TEST(FabricSearch, SmallSetsAndBadInput) {
  // Every link and every node of 2..9 nodes, one group and blocks of two.
  for (int n = 2; n <= 9; ++n)
    for (int blocks : {1, n / 2}) {
      for (int a = 0; a < n; ++a)
        for (int b = a + 1; b < n; ++b) {
          Fabric f(n, 1);
          f.bad = {{a, b}};
          auto r = search_fabric(iota(n), f, policy_with_blocks(blocks));
          EXPECT_EQ(named(r), (Named{{"link", a, b}}))
              << n << "/" << blocks << ": " << a << "," << b;
          EXPECT_LE(r.rounds, r.bound);
        }
      for (int x = 0; x < n && n >= 4; ++x) {
        Fabric f(n, 1);
        f.bad_nodes = {x};
        auto r = search_fabric(iota(n), f, policy_with_blocks(blocks));
        EXPECT_EQ(named(r), (Named{{"node", x, x}})) << n << "/" << blocks << ": node " << x;
      }
    }
  Fabric f(4, 1);
  EXPECT_THROW(search_fabric({0}, f, SearchPolicy{}), std::invalid_argument);
  EXPECT_THROW(search_fabric({0, 1, 1}, f, SearchPolicy{}), std::invalid_argument);
  SearchPolicy zero;
  zero.repeats = 0;
  EXPECT_THROW(search_fabric({0, 1}, f, zero), std::invalid_argument);
}

TEST(FabricSearch, TheRoundBoundIsLogarithmicPerFault) {
  // 1024 in 16 blocks of 64: 1 + 15 (first stage) + 4 x (3 x L(128) + 2; L(128) = 15) + 16 + 3.
  EXPECT_EQ(fabric_search_round_bound(1024, policy_with_blocks(16)), 1 + 15 + 4 * 47 + 16 + 3);
  // Doubling N at the same block size adds rounds to the first stage, not per fault.
  int per_fault_1024 =
      fabric_search_round_bound(1024, policy_with_blocks(16)) - fabric_search_round_bound(1024, [] {
        auto p = policy_with_blocks(16);
        p.max_links = 3;
        return p;
      }());
  int per_fault_4096 =
      fabric_search_round_bound(4096, policy_with_blocks(64)) - fabric_search_round_bound(4096, [] {
        auto p = policy_with_blocks(64);
        p.max_links = 3;
        return p;
      }());
  EXPECT_EQ(per_fault_1024, 47);
  EXPECT_EQ(per_fault_4096, per_fault_1024);  // the same block size: the same rounds per fault
}

}  // namespace
}  // namespace fabkit::slurm
