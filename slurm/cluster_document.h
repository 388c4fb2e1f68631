// `fabcheck cluster` as a Report{kind "cluster"}: the judgement's findings (slurm/cluster_judge.h)
// and the "cluster" section (docs/json/cluster.md); --plan-only's "plan" section.
#pragma once

#include <string>
#include <vector>

#include "common/report.h"
#include "slurm/cluster_runner.h"
#include "slurm/matrix_judge.h"
#include "slurm/planner.h"
#include "slurm/schedule.h"

namespace fabkit::slurm {

// plan: the planner's choice the rounds came from (cluster.schedule.planner); null = none.
Report build_cluster_report(const slurm::ClusterFacts& f, const slurm::MatrixOptions& options,
                            const ClusterPlan* plan = nullptr);

// The plan and what it would cost and cover, nothing launched: the strategy and why, the rounds
// by host name, the estimate against the budget, the coverage (slurm/plan_coverage.h) and the
// rounds a bad-link search would add (slurm/link_search.h).
Report build_plan_report(const std::vector<std::string>& hosts, const ClusterPlan& plan);

}  // namespace fabkit::slurm
