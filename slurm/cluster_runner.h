// `fabcheck cluster`: the gather. `fabcheck node --json` on every node in parallel through the
// launcher, then the pair rounds of the schedule (the pairs of one round in parallel, each one the
// `fabcheck pair` controller with its own agents). Every wait is bounded: the node runs by
// node_timeout_ms, each pair run by the pair controller's own step bounds.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/progress.h"
#include "common/report.h"
#include "fabric/launch/launcher.h"
#include "fabric/pair/pair_controller.h"
#include "slurm/fabric_search.h"
#include "slurm/fabric_topology.h"
#include "slurm/link_search.h"
#include "slurm/search_cost.h"
#include "slurm/matrix_judge.h"
#include "slurm/schedule.h"

namespace fabkit::slurm {

// The bad-link search after the matrix (docs/cluster.md, "Bad-link search in the command"): group
// tests are ring all-reduces of fabkit-socket across the group (fabric/pair/group_controller.h),
// the rounds those of slurm/fabric_search.h.
struct SearchOptions {
  bool force = false;    // --search: run it even when the matrix is clean
  bool enabled = true;   // --no-search: never
  // Set when the plan leaves pairs unmeasured (slurm/plan_search.h): the search runs even when the
  // matrix is clean, with this as its trigger.
  std::string cover_trigger;
  // The rounds' policy: --search-max-links, --search-repeats, --search-blocks (0: the cheapest by
  // the cost model), --search-chunk (a group of n runs n x chunk), --search-bytes (one size for
  // every group, fixed_bytes), iterations.
  SearchPolicy policy;
  // A group is positive when a ring run failed or a ring's busbw (as Gbit/s) is below fraction x
  // the busbw a healthy ring of its size reaches when each link gives the reference (the median
  // single-stream TCP figure of the matrix's healthy links), with alpha_s per ring step
  // (group_test_positive, slurm/search_cost.h).
  double fraction = 0.25;
  double alpha_s = kGroupBarAlphaS;
};

struct ClusterOptions {
  std::vector<std::string> hosts;
  std::string launcher_text = "ssh";
  launch::LauncherSpec launcher;
  std::string agent_path;  // fabcheck on the hosts
  PairPlan plan = PairPlan::kAll;
  // The rounds to run, from plan_cluster (slurm/planner.h); empty = make_schedule(plan).
  std::vector<Round> rounds;
  // Pair runs at once: one thread each, blocked on its agents under the pair's deadlines
  // (docs/cluster.md, "The controller at scale"). The CLI sets it from controller_budget.h:
  // every pair of a round at once unless the descriptor or thread budget says less.
  int max_parallel = 32;
  int max_parallel_nodes = 0;  // node checks at once; 0: max_parallel
  int node_timeout_ms = 60000;
  bool skip_pairs = false;
  // After the rounds, the links the matrix judge flags (slow or failed between healthy nodes) are
  // measured once more, in rounds of disjoint pairs, so one noisy run is not called a bad cable.
  bool retest = true;
  MatrixOptions matrix;
  SearchOptions search;
  pair::PairOptions pair;  // host_a/host_b are set per run (and progress: none, they run at once)
  // Node checks, pair rounds, re-tests and search rounds as they finish, for the CLI's progress
  // line; null shows nothing. Called from the worker threads.
  ProgressSink* progress = nullptr;
};

struct NodeRun {
  std::string host;
  bool ok = false;    // a node report came back
  Json report;        // the `fabcheck node --json` document (null when !ok)
  std::string error;  // !ok: the launcher's exit and stderr, or the parse error
  std::string exit;   // "exit status 1", "killed by signal 9"
  double elapsed_ms = 0;
};

struct PairRun {
  int a = 0, b = 0;
  int round = 0;
  pair::PairFacts facts;
  double elapsed_ms = 0;
};

// One group test: floor(n/2) ring orders (every pair of the group adjacent once), each a ring
// all-reduce over the group's agents.
struct GroupTestRun {
  std::vector<int> nodes;
  bool positive = false;
  std::optional<double> min_busbw_gbps;  // the slowest ring's busbw at bytes
  int rings = 0;                         // ring orders that ran
  std::string error;                     // a failed step or ring run (positive)
  double elapsed_ms = 0;
  uint64_t bytes = 0;                      // the all-reduce size (group_test_bytes)
  std::optional<double> threshold_gbit_s;  // the group's bar (group_test_threshold_gbit_s)
};

struct SearchFacts {
  bool ran = false;
  std::string trigger;  // "--search", or the link the matrix flagged that its re-test kept
  std::string skipped;  // why it did not run (when !ran and it was considered)
  std::vector<int> candidates;  // nodes searched: node check ok, not a slow node
  // threshold_gbit_s: fraction x reference, the bar of a bandwidth-bound ring (each group's own
  // bar, at its size, is in its GroupTestRun).
  std::optional<double> reference_gbit_s, threshold_gbit_s;
  SearchPolicy policy;  // as run: blocks chosen, chunk or fixed size
  std::vector<std::vector<GroupTestRun>> rounds;
  std::vector<double> round_ms;
  FabricSearchResult result;
  double estimated_s = 0;        // search_cost_s for the candidates (the planner's reserve)
  int rounds_bound = 0;          // fabric_search_round_bound(candidates, policy)
  int full_schedule_rounds = 0;  // a round-robin over the candidates: n-1 (n even) or n
  double elapsed_ms = 0;         // the whole search, its agents' start included
  double agents_start_ms = 0;    // the candidates' agents started and their ring probed, once
};

struct ClusterFacts {
  std::vector<std::string> hosts;
  std::string launcher;
  PairPlan plan = PairPlan::kAll;
  int max_parallel = 0;
  std::vector<Round> rounds;
  std::vector<NodeRun> nodes;    // in host order
  std::vector<PairRun> pairs;    // in schedule order
  std::vector<PairRun> retests;  // the flagged links measured again (round = -1 - retest round)
  std::vector<double> round_ms;
  double nodes_ms = 0, pairs_ms = 0, retest_ms = 0;
  SearchFacts search;
  // The fabric's shape when known (--topology): the judge then names a bad leaf<->spine path
  // (slurm/path_judge.h). spines = 0: unknown, no path judged.
  FabricTopology topology;
};

ClusterFacts run_cluster(const ClusterOptions& o);

// The flagged links of f's matrix measured once more (f.retests), in rounds of disjoint pairs.
void retest_flagged(const ClusterOptions& o, ClusterFacts& f);

// Runs fn(i) for i in [0, n) on up to `parallel` threads at once; returns when all are done.
void run_parallel(size_t n, int parallel, const std::function<void(size_t)>& fn);

}  // namespace fabkit::slurm
