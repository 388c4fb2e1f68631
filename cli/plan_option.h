// `fabcheck cluster`'s plan flags (docs/cluster.md, "The schedule"): --pairs auto|all|ring,
// --budget, --topology FILE, --per-pair-s; the plan is made before anything is launched.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "slurm/fabric_search.h"
#include "slurm/plan_search.h"
#include "slurm/planner.h"

namespace fabkit::cli {

struct PlanArgs {
  std::string pairs = "auto";
  std::string budget = "10m";
  std::string topology;  // a Slurm topology.conf; empty = unknown (scontrol is not asked)
  double per_pair_s = slurm::kDefaultPerPairS;
};

void add_plan_options(CLI::App* sub, PlanArgs* args);

// Reads --topology (a usage error names the file, line and field) and plans the rounds with the
// search (slurm/plan_search.h). Throws UsageError (exit 2) for a bad --pairs, --budget or topology
// file. search: the bad-link search's policy, whose estimated cost (search_cost_s) is kept out of
// the budget when the search is planned (--search, or pairs the plan leaves unmeasured).
// search_fraction: --search-fraction (a fault's group tests are priced at it).
slurm::PlanWithSearch make_cluster_plan(const PlanArgs& args, const std::vector<std::string>& hosts,
                                        int max_parallel, const slurm::SearchPolicy& search,
                                        double search_fraction, slurm::SearchMode mode);

}  // namespace fabkit::cli
