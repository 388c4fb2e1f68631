// The planner's choice and its coverage as JSON (docs/json/cluster.md): the body of
// --plan-only's "plan" section and a run's cluster.schedule.planner.
#pragma once

#include "common/json.h"
#include "slurm/planner.h"

namespace fabkit::slurm {

Json coverage_json(const PlanCoverage& c);

// pairs (asked), plan (chosen), why, budget and estimate, shifts, coverage.
Json planner_json(const ClusterPlan& p);

}  // namespace fabkit::slurm
