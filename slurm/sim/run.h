// One simulated `fabcheck cluster` run through the command's own verdict code: the plan's pairs
// measured on the simulated fabric become PairMeasurements for judge_matrix, the flagged links
// are measured again as retest_flagged does, the bad-link search runs when run_search would
// (a link still flagged, or forced) over the same candidates with the same threshold rule, and
// the path judge names a bad leaf<->spine cable. The outcome is scored against the injected
// fault. Pure: no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "slurm/matrix_judge.h"
#include "slurm/path_judge.h"
#include "slurm/plan_search.h"
#include "slurm/schedule.h"
#include "slurm/sim/fabric.h"
#include "slurm/sim/group_model.h"

namespace fabkit::slurm::sim {

struct SimOptions;
// The plan and whether the search is planned, as the command decides them (plan_with_search,
// slurm/plan_search.h, with the search's estimated cost by its default cost model): "auto" (the
// default: plan_cluster within budget_s at per_pair_s and max_parallel, on the simulated
// topology), "all" or "ring". Throws std::invalid_argument on another name.
PlanWithSearch plan_rounds(const SimOptions& o, const FabricTopology& t);

// What the search concluded: search_fabric's faults (every bad link up to the policy's cap, bad
// nodes, flaky links).
struct SearchOutcome {
  std::string outcome;              // found | none | not_reproduced
  std::vector<NodePair> bad_links;  // named bad
  std::vector<int> bad_nodes;       // named bad
  std::vector<NodePair> flaky_links;
  int rounds = 0, group_tests = 0;
};
// policy: the blocks already chosen (choose_search_blocks, as run_search does).
SearchOutcome search_candidates(const std::vector<int>& candidates, GroupTester& tester,
                                const SearchPolicy& policy);

struct SimOptions {
  std::string plan = "auto";
  double budget_s = 600;      // --budget, for the auto plan
  int max_parallel = 32;      // --max-parallel: pair runs at once (0: a whole round)
  MatrixOptions matrix;       // --slow-fraction
  bool retest = true;         // --no-retest: false
  bool search = true;         // --no-search: false
  // --search; without it the search runs as the command's default does: when a link stays
  // flagged, or when the plan leaves pairs unmeasured.
  bool force_search = false;
  GroupModel group;
  double per_pair_s = 0;     // one pair run's wall time (measured)
  double node_checks_s = 0;  // the node checks' wall time (measured)
};

struct SimOutcome {
  int nodes = 0;
  int plan_rounds = 0, plan_waves = 0, pair_runs = 0, retest_waves = 0;
  double node_checks_s = 0, plan_s = 0, retest_s = 0, search_s = 0, wall_s = 0;
  bool search_ran = false;
  SearchOutcome search;
  // What the judges named.
  std::vector<int> blamed_nodes;        // node_slow / node_unreachable, search's bad nodes
  std::vector<NodePair> blamed_links;   // link_slow / link_failed, search's bad links
  std::vector<NodePair> flaky_links;    // link_flaky
  std::vector<SpinePath> blamed_paths;  // spine_path_slow
  std::vector<std::string> codes;       // every finding code, in order
  // Scored against the fault: the fault named as what it is (a slow or flapping link as that
  // link, a flapping one as flaky or bad; a slow NIC as its node; a bad spine port as its
  // cable); false blames name a node, link or cable the fault does not touch (a flapping link's
  // node always counts: "never as a healthy node"); other blames touch it but are not it.
  bool detected = false;
  int false_blames = 0;
  int other_blames = 0;
};

SimOutcome simulate_run(const Fabric& fabric, const SimOptions& options, uint64_t seed);

}  // namespace fabkit::slurm::sim
