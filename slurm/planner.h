// Which pairs `fabcheck cluster` measures when it cannot measure them all: the plan that fits the
// cluster and a time budget (`--budget`, `--pairs auto`), and what it covers (plan_coverage.h).
// Pure: the node count, the fabric's shape and the cost figures in, rounds of disjoint pairs out
// (docs/cluster.md, "The schedule").
#pragma once

#include <string>
#include <vector>

#include "slurm/fabric_topology.h"
#include "slurm/plan_coverage.h"
#include "slurm/schedule.h"

namespace fabkit::slurm {

// One pair run's wall time with the cluster defaults (--bandwidth-ms 300, --pings 200, no
// transports), when --per-pair-s is not given: a wave lasts as long as its slowest pair run.
// Measured 2026-12-06 over 8 network-namespace hosts on this 2-core machine while other builds
// loaded it (load average 9-11), one interface a host:
//   ip netns exec CTL fabcheck cluster h0 .. h7 --launcher 'ip netns exec {host}' --json
//     --pairs ring --no-search [--max-parallel 1]
// (NetnsWorld(hosts=8, controller=True) as tests/integration/cluster/test_cluster.py builds it;
// matrix.pairs[].elapsed_ms): 4 pairs at once 2.3-2.7 s each (median 2.5 s, rounds 2.4-2.7 s),
// one at a time 1.2-1.6 s (median 1.3-1.4 s). 3 s covers the slowest of a round. A node with
// RDMA rails adds two RC runs per rail and more interface pairs add C_a x C_b TCP tests
// (docs/cluster.md, "Cost model"): give --per-pair-s from a real run's elapsed_ms there.
inline constexpr double kDefaultPerPairS = 3.0;
// `--budget 10m`: the target for a cluster check at any N.
inline constexpr double kDefaultBudgetS = 600.0;

struct PlanInput {
  int nodes = 0;
  // leaf_of empty = unknown (every node on one leaf); spines 0 = unknown.
  FabricTopology topology;
  double budget_s = kDefaultBudgetS;
  double per_pair_s = kDefaultPerPairS;
  // Pair runs at once; 0 = every pair of a round at once.
  int max_parallel = 0;
  // Seconds kept out of the budget for the bad-link search after the rounds.
  double search_reserve_s = 0;
  PairPlan pairs = PairPlan::kAuto;  // --pairs
  // Sentences about the topology itself (from topology_for_hosts) carried into the coverage.
  std::vector<std::string> topology_notes;
};

enum class PlanStrategy { kAllPairs, kRing, kShifts };
// "all" | "ring" | "shifts" (the JSON's `plan`).
const char* to_string(PlanStrategy s);

struct ClusterPlan {
  PairPlan asked = PairPlan::kAuto;
  PlanStrategy strategy = PlanStrategy::kAllPairs;
  std::string why;  // one sentence: the choice and the figures behind it
  // The host order the ring and the shifts follow: sorted by leaf, host order within a leaf.
  std::vector<int> order;
  // Distances over `order` measured: 1 = the ring; shift s = pairs (order[i], order[i+s mod N]).
  // Empty for all-pairs.
  std::vector<int> shifts;
  std::vector<Round> rounds;
  ScheduleCost cost;  // at per_pair_s and the effective max_parallel
  double budget_s = 0, per_pair_s = 0, search_reserve_s = 0;
  int max_parallel = 0;      // as given (0 = every pair of a round at once)
  double estimated_s = 0;    // cost.seconds + search_reserve_s
  bool fits_budget = false;  // estimated_s <= budget_s
  double all_pairs_s = 0;    // what --pairs all would cost (pair rounds only)
  PlanCoverage coverage;
};

ClusterPlan plan_cluster(const PlanInput& in);

// What --pairs all costs without building its N(N-1)/2 pairs: the circle method's rounds (N-1
// of N/2 pairs, or N of (N-1)/2 for odd N) split into waves of max_parallel (0 = no split).
ScheduleCost all_pairs_cost(int nodes, double per_pair_s, int max_parallel);

// Shift s over `order`: the pairs (order[i], order[i+s mod N]) in 2 rounds of disjoint pairs (3
// when the cycles it forms are odd). s in [1, N/2].
std::vector<Round> shift_rounds(const std::vector<int>& order, int s);

// `--budget`: "600" or "600s", "10m", "1h", "1.5h". Throws UsageError naming the text and the
// accepted forms.
double parse_budget_s(const std::string& text);

}  // namespace fabkit::slurm
