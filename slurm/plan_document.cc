#include "slurm/plan_document.h"

namespace fabkit::slurm {

Json coverage_json(const PlanCoverage& c) {
  Json first = Json::array();
  for (const auto& p : c.paths_under_2_first)
    first.push_back({{"leaf", p.leaf_name},
                     {"spine", p.spine},
                     {"direction", p.up ? "up" : "down"},
                     {"loads", p.loads}});
  return {{"pairs_measured", c.pairs_measured},
          {"pairs_total", c.pairs_total},
          {"min_pairs_per_node", c.min_pairs_per_node},
          {"median_pairs_per_node", c.median_pairs_per_node},
          {"nodes_under_2_pairs", c.nodes_under_2},
          {"rails", c.rails},
          {"topology", c.topology},
          {"leaves", c.leaves},
          {"spines", c.spines},
          {"leaf_spine_paths", c.paths},
          {"paths_under_2_loads", c.paths_under_2},
          {"paths_under_2_loads_first", first},
          {"leaf_pairs", c.leaf_pairs},
          {"leaf_pairs_met", c.leaf_pairs_met},
          {"notes", c.notes}};
}

Json planner_json(const ClusterPlan& p) {
  return {{"pairs", to_string(p.asked)},
          {"plan", to_string(p.strategy)},
          {"why", p.why},
          {"budget_s", p.budget_s},
          {"per_pair_s", p.per_pair_s},
          {"max_parallel", p.max_parallel},
          {"search_reserve_s", p.search_reserve_s},
          {"pair_rounds_estimated_s", p.cost.seconds},
          {"total_estimated_s", p.estimated_s},
          {"fits_budget", p.fits_budget},
          {"all_pairs_estimated_s", p.all_pairs_s},
          {"shifts", p.shifts},
          {"coverage", coverage_json(p.coverage)}};
}

}  // namespace fabkit::slurm
