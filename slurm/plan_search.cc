#include "slurm/plan_search.h"

namespace fabkit::slurm {

PlanWithSearch plan_with_search(PlanInput in, SearchMode mode, double search_s) {
  PlanWithSearch out;
  in.search_reserve_s = 0;
  if (mode == SearchMode::kForce) {
    in.search_reserve_s = search_s;
    out.plan = plan_cluster(in);
    out.search_planned = true;
    out.trigger = "--search";
    return out;
  }
  out.plan = plan_cluster(in);
  const PlanCoverage& c = out.plan.coverage;
  if (mode == SearchMode::kOff || c.pairs_measured >= c.pairs_total) return out;
  // The pair rounds now share the budget with the search: planned again with its reserve.
  in.search_reserve_s = search_s;
  out.plan = plan_cluster(in);
  out.search_planned = true;
  out.trigger = "the plan measures " + std::to_string(out.plan.coverage.pairs_measured) + " of " +
                std::to_string(out.plan.coverage.pairs_total) +
                " pairs; the search's group tests cover every pair";
  return out;
}

}  // namespace fabkit::slurm
