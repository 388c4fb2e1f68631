// The pair matrix of `fabcheck cluster`, judged: which node is slow against every peer, and which
// single link is bad between two otherwise healthy nodes. Pure: measurements in, findings out.
//
// Robust statistics, because one bad node or link must not move the yardstick it is measured
// against: each node's score is the upper median of its pair figures (a failed pair counts 0), so
// it is low only when a strict majority of the node's pairs are low; the cluster reference is the
// median of the node scores. A node is slow when its score is below slow_fraction x reference; a
// link is bad when its figure is below slow_fraction x the lower of its two nodes' scores and
// neither node is slow (a slow node's links are explained by the node).
//
// The links' own noise: on a shared or loaded fabric healthy links spread widely, and with
// thousands of pairs a fixed fraction samples that tail (a 64-host run here put 46 healthy links
// below half their nodes' figure twice in a row). So the bar for a link is the lower of
// slow_fraction and what the noise reaches: noise_sigmas robust standard deviations below the
// median of ln(figure / expected) over the links between healthy nodes (1.4826 x their median
// absolute deviation, which a few bad links do not move). A tight fabric keeps slow_fraction.
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
  // A link must also be this many robust standard deviations below the healthy links' median
  // (0: off). Negative: from the number of links L, so that a healthy link is blamed in at most
  // 1% of runs if the noise is Gaussian in the log: each of its figures out there with
  // p = sqrt(0.01 / L) when the re-test confirms (both must be), 0.01 / L when it does not; never
  // under 3 (the tails measured here are heavier than Gaussian).
  double noise_sigmas = -1;
  bool retest = true;  // whether a re-test confirms a flagged link (fabcheck cluster --no-retest)
  int noise_min_links = 30;  // fewer links than this: no spread is estimated (slow_fraction alone)
};

// The sigmas noise_sigmas < 0 stands for, at `links` links.
double auto_noise_sigmas(int links, bool retest);

// The spread of ln(figure / expected) over the links between healthy nodes that have a figure.
struct LinkSpread {
  int links = 0;
  double sigmas = 0;     // the noise_sigmas used
  double center = 0;     // their median
  double sigma = 0;      // 1.4826 x their median absolute deviation
  double noise_bar = 0;  // exp(center - noise_sigmas x sigma): the fraction the noise reaches
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
  std::optional<LinkSpread> link_spread;   // when noise_sigmas > 0 and enough links
  double link_fraction = 0;  // the bar links were judged by: min(slow_fraction, noise_bar)
  std::vector<NodeScore> nodes;            // in host order
  std::vector<LinkVerdict> links;          // in measurement order
  std::vector<Finding> findings;
};

// The median with the upper middle element for even counts: low only when a strict majority is.
double upper_median(std::vector<double> values);
double median(std::vector<double> values);

// The spread of `log_ratios` (ln of figure / expected), or nullopt below options.noise_min_links.
std::optional<LinkSpread> link_spread(const std::vector<double>& log_ratios,
                                      const MatrixOptions& options);

MatrixVerdict judge_matrix(const std::vector<std::string>& hosts,
                           const std::vector<PairMeasurement>& measurements,
                           const MatrixOptions& options);

}  // namespace fabkit::slurm
