// `fabcheck cluster`: from the gathered runs to findings. Pure: the pair figures become the
// matrix (matrix_judge), the node reports the drift facts (drift_judge), and the runs' own
// findings are folded in by code, so a fault seen on 40 pairs is one finding naming them.
// slurm/cluster_document.h makes the judgement the report with its "cluster" section.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/report.h"
#include "slurm/cluster_runner.h"
#include "slurm/drift_judge.h"
#include "slurm/matrix_judge.h"
#include "slurm/node_gpu_health.h"

namespace fabkit::slurm {

// "nodeA<->nodeB": how a pair is named in findings and in the cluster section.
std::string link_name(const ClusterFacts& f, const NodePair& p);

// The matrix entry of one pair run: the RDMA RC write bandwidth (the slowest rail) when the RC
// test ran, else the chosen interface pair's single-stream TCP bandwidth. A run without a
// reachable interface pair, or whose RC test failed on every rail, is a failed entry naming the
// failed step.
PairMeasurement measurement_from_pair(const PairRun& run);

// Every pair run's matrix entry, with the re-test figures of the links measured again.
std::vector<PairMeasurement> matrix_measurements(const ClusterFacts& f);

// NCCL versions the pair runs' NCCL transports reported, by host ("" when none ran).
std::string nccl_version_of(const std::vector<PairRun>& runs, const std::string& host);

struct ClusterJudgement {
  // Node checks that failed, the nodes' and pairs' own warn/fail findings grouped by code, the
  // matrix's, the drift's and the bad-link search's.
  std::vector<Finding> findings;
  std::vector<Report> node_reports;   // per node in host order; empty where the check failed
  std::vector<NodeDriftFacts> drift;  // the nodes whose report came back
  std::vector<std::optional<NodeGpuHealth>> gpu_health;  // per node; nullopt where the check failed
  std::vector<PairMeasurement> measurements;  // per pair run, in run order
  MatrixVerdict matrix;
};

ClusterJudgement judge_cluster(const ClusterFacts& f, const MatrixOptions& options);

}  // namespace fabkit::slurm
