// Which pairs of nodes `fabcheck cluster` measures, and in what order: rounds of disjoint pairs,
// so that every pair of a round runs at the same time without two tests sharing a node (and its
// NIC). Pure: node indexes in, rounds out (docs/cluster.md has the cost model).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fabkit::slurm {

struct NodePair {
  int a = 0, b = 0;  // node indexes, a < b
  bool operator==(const NodePair& o) const { return a == o.a && b == o.b; }
};

struct Round {
  std::vector<NodePair> pairs;
  std::vector<int> idle;  // nodes with no partner this round (the bye of an odd tournament)
};

// --pairs: kAuto lets the planner choose within the budget (slurm/planner.h).
enum class PairPlan { kAll, kRing, kAuto };
const char* to_string(PairPlan p);
// "auto" | "all" | "ring". Throws UsageError naming the value and the choices.
PairPlan pair_plan_from_string(const std::string& text);

// Round-robin tournament (circle method): node 0 stays fixed, the others rotate one place per
// round, so N nodes (N even) play N-1 rounds of N/2 pairs and every pair meets exactly once. An
// odd N gets a phantom node: its partner in each round sits out (N rounds of (N-1)/2 pairs).
std::vector<Round> round_robin(int nodes);

// Neighbour pairs (i, i+1 mod N): the ring's N links (1 for N = 2) in 2 rounds of disjoint pairs
// (3 when N is odd: the closing link N-1<->0 shares a node with both of the others' first pair).
// Each node is measured against its two neighbours only: a slow node still shows against both,
// but a bad link between non-neighbours is not tested.
std::vector<Round> ring_rounds(int nodes);

// kAll or kRing over the host order; kAuto needs the topology and the budget: plan_cluster
// (slurm/planner.h).
std::vector<Round> make_schedule(PairPlan plan, int nodes);

// Any list of pairs (the links to re-test) packed greedily, in order, into rounds of disjoint
// pairs: each pair goes into the first round where neither node is busy. idle is left empty.
std::vector<Round> disjoint_rounds(const std::vector<NodePair>& pairs);

// What a schedule costs in wall time when every round's pairs run in parallel (up to
// max_parallel pairs at once; a round with more is split into waves) and one pair run takes
// per_pair_s. The controller's own work between rounds is negligible next to a pair run.
struct ScheduleCost {
  int rounds = 0;
  int waves = 0;            // rounds after splitting at max_parallel
  int pair_runs = 0;        // total pairs measured
  int sequential_runs = 0;  // N(N-1)/2: one pair at a time, for comparison
  double seconds = 0;       // waves * per_pair_s
};
ScheduleCost schedule_cost(const std::vector<Round>& rounds, int nodes, double per_pair_s,
                           int max_parallel);

// Empty when the schedule is valid: every pair index in [0, nodes), a < b, no node twice in one
// round, no pair twice overall; otherwise the first violation, named.
std::string check_schedule(const std::vector<Round>& rounds, int nodes);

}  // namespace fabkit::slurm
