// `fabcheck cluster` as a Report{kind "cluster"}: the judgement's findings (slurm/cluster_judge.h)
// and the "cluster" section (docs/json/cluster.md); --plan-only's "plan" section.
#pragma once

#include <string>
#include <vector>

#include "common/report.h"
#include "slurm/cluster_runner.h"
#include "slurm/matrix_judge.h"
#include "slurm/schedule.h"

namespace fabkit::slurm {

Report build_cluster_report(const slurm::ClusterFacts& f, const slurm::MatrixOptions& options);

// The schedule and what it would cost, nothing launched: the rounds by host name, the cost model
// at per_pair_s, and the rounds a bad-link search would add (slurm/link_search.h).
Report build_plan_report(const std::vector<std::string>& hosts, slurm::PairPlan plan,
                         int max_parallel, double per_pair_s);

}  // namespace fabkit::slurm
