// Whether the bad-link search runs after the matrix whatever the matrix finds, decided with the
// plan: the command (cli/plan_option.cc) and the fabric simulator (slurm/sim/run.cc) both call
// plan_with_search, so the simulator's "default" is the command's. Pure.
//
// By default (auto) a plan that measures every pair leaves the search to a link the matrix keeps
// flagged, as before. A plan that cannot (--pairs ring, or auto over a budget: at 1,024 nodes the
// pair rounds reach a fifth of the pairs in 10 minutes) would never look at a bad link between two
// nodes it does not pair, so the search runs anyway: its first stage puts every pair of nodes in
// one group test, and its estimated cost is kept out of the budget before the pair rounds are
// chosen (docs/cluster.md, "The plan and the search").
#pragma once

#include <string>

#include "slurm/fabric_search.h"
#include "slurm/planner.h"

namespace fabkit::slurm {

enum class SearchMode { kAuto, kForce, kOff };  // default, --search, --no-search

struct PlanWithSearch {
  ClusterPlan plan;
  // The search runs after the matrix whatever it finds: --search, or the pairs the plan leaves.
  bool search_planned = false;
  // "--search" | "the plan measures M of T pairs; ..." | "" (not planned).
  std::string trigger;
  // The search over every node by its cost model (search_cost_s at the default figures, measured
  // between netns hosts), whether planned or not: what it would cost to cover the pairs left.
  double search_estimate_s = 0;
};

// policy: the search's (its max_parallel taken from in.max_parallel); search_fraction: the
// group tests' bar (--search-fraction), at which a fault's tests are priced. The estimate is kept
// out of in.budget_s when the search is planned (in.search_reserve_s is ignored).
PlanWithSearch plan_with_search(PlanInput in, SearchMode mode, const SearchPolicy& policy,
                                double search_fraction);

}  // namespace fabkit::slurm
