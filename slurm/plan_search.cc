#include "slurm/plan_search.h"

#include "slurm/search_cost.h"

namespace fabkit::slurm {

PlanWithSearch plan_with_search(PlanInput in, SearchMode mode, const SearchPolicy& policy,
                                double search_fraction) {
  PlanWithSearch out;
  SearchPolicy p = policy;
  p.max_parallel = in.max_parallel;
  RingCostModel model;
  model.fault_bandwidth_fraction = search_fraction;
  const double search_s = in.nodes >= 2 ? search_cost_s(in.nodes, p, model) : 0;
  out.search_estimate_s = search_s;
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
