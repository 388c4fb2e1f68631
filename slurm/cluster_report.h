// `fabcheck cluster`: from the gathered runs to the report. Pure: the pair figures become the
// matrix (matrix_judge), the node reports the drift facts (drift_judge), and the runs' own
// findings are folded in by code, so a fault seen on 40 pairs is one finding naming them.
#pragma once

#include <string>
#include <vector>

#include "common/report.h"
#include "profile/profile_model.h"
#include "slurm/cluster_runner.h"
#include "slurm/matrix_judge.h"

namespace fabkit::slurm {

// The matrix entry of one pair run: the RDMA RC write bandwidth (the slowest rail) when the RC
// test ran, else the chosen interface pair's single-stream TCP bandwidth. A run without a
// reachable interface pair, or whose RC test failed on every rail, is a failed entry naming the
// failed step.
PairMeasurement measurement_from_pair(const PairRun& run);

// Every pair run's matrix entry, with the re-test figures of the links measured again.
std::vector<PairMeasurement> matrix_measurements(const ClusterFacts& f);

// NCCL versions the pair runs' NCCL transports reported, by host ("" when none ran).
std::string nccl_version_of(const std::vector<PairRun>& runs, const std::string& host);

// Report{kind "cluster"}: findings (node checks that failed, the nodes' and pairs' own warn/fail
// findings grouped by code, the matrix and the drift) and the "cluster" section
// (docs/json/cluster.md).
Report build_cluster_report(const ClusterFacts& f, const MatrixOptions& options);

// `fabcheck cluster --plan-only`: the schedule and what it would cost, nothing launched.
// Report{kind "cluster"} with a "plan" section (docs/json/cluster.md): the rounds by host name,
// the cost model at per_pair_s, and the rounds a bad-link search would add (link_search.h).
Report build_plan_report(const std::vector<std::string>& hosts, PairPlan plan, int max_parallel,
                         double per_pair_s);

// The merged cluster.json: every node report that came back and every pair report, each node
// keyed by the name fabcheck cluster was given (network-namespace or container hosts share one
// kernel hostname). Throws UsageError when no node report came back.
profile::Profile cluster_profile(const ClusterFacts& f, const std::string& created_on);

}  // namespace fabkit::slurm
