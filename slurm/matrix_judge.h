// The pair matrix of `fabcheck cluster`, judged: which node is slow against every peer, and which
// single link is bad between two otherwise healthy nodes. Pure: measurements in, findings out.
//
// Robust statistics, because one bad node or link must not move the yardstick it is measured
// against: each node's score is the upper median of its pair figures (a failed pair counts 0), so
// it is low only when a strict majority of the node's pairs are low; the cluster reference is the
// median of the node scores. A node is slow when its score is below slow_fraction x reference; a
// link is bad when its figure is below slow_fraction x the lower of its two nodes' scores and
// neither node is slow (a slow node's links are explained by the node).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"

namespace fabkit::slurm {

struct PairMeasurement {
  int a = 0, b = 0;              // node indexes into the host list
  bool ok = false;               // the pair run produced a figure
  std::optional<double> gbit_s;  // the pair's bandwidth figure (docs/cluster.md: which one)
  std::optional<double> rtt_us;  // median round trip of the chosen link, for the report
  std::string source;            // where gbit_s came from: "rdma_rc write_bw", "tcp single stream"
  std::string error;             // !ok: the failed step, its finding code and message
  // A link the first pass flagged is measured once more (docs/cluster.md, "Re-test"): a link
  // that is healthy the second time is reported as flaky (warn), not bad (fail).
  bool retested = false;
  bool retest_ok = false;
  std::optional<double> retest_gbit_s;
  // What gbit_s can reach at most: the measured rail's port rate (RC) or the chosen interfaces'
  // speed (TCP); unknown when a side does not report one. Baselines judge the figure against it.
  std::optional<double> link_rate_gbit_s;
};

struct MatrixOptions {
  double slow_fraction = 0.5;  // below this fraction of the yardstick is "slow"
};

struct NodeScore {
  std::string host;
  int measured = 0;  // pairs this node took part in
  int low = 0;       // of which below slow_fraction x the cluster reference
  int failed = 0;
  std::optional<double> score_gbit_s;  // upper median of its figures (failed = 0)
  bool slow = false;
};

struct LinkVerdict {
  int a = 0, b = 0;
  std::optional<double> expected_gbit_s;  // min of the two nodes' scores
  std::string
      state;  // ok | slow | failed | flaky (bad once, healthy on re-test) | node (a slow node)
};

struct MatrixVerdict {
  std::optional<double> reference_gbit_s;  // median of the node scores
  std::vector<NodeScore> nodes;            // in host order
  std::vector<LinkVerdict> links;          // in measurement order
  std::vector<Finding> findings;
};

// The median with the upper middle element for even counts: low only when a strict majority is.
double upper_median(std::vector<double> values);
double median(std::vector<double> values);

MatrixVerdict judge_matrix(const std::vector<std::string>& hosts,
                           const std::vector<PairMeasurement>& measurements,
                           const MatrixOptions& options);

}  // namespace fabkit::slurm
