// Baselines for cluster reports: a `fabcheck cluster` run compared with a saved one, pair by pair
// (matched by host names, in either order) and node by node, and with expected figures that need
// no old run: each pair near its link rate, and each pair near the median of the run's pairs (the
// one slow link stands out). A pure judge, like pair_baseline.h: two parsed documents in, rows and
// findings out.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"

namespace fabkit::reports::baseline {

struct ClusterBaselineOptions {
  double regression_pct = 10.0;        // fail when a pair's figure < old * (1 - pct/100)
  double rtt_regression_pct = 50.0;    // warn when its RTT > old * (1 + pct/100) ...
  double rtt_min_rise_us = 10.0;       // ... and rose by at least this much (docs/reports.md: why)
  double expect_link_fraction = 0.90;  // warn when a figure < fraction * its link rate; 0 = off
  double expect_median_pct = 25.0;     // warn when a figure < (1 - pct/100) * the median; 0 = off
};

// One pair, present in the baseline, the new run or both. Figures are the matrix's gbit_s
// (docs/json/cluster.md: RDMA RC write bandwidth, else single-stream TCP).
struct ClusterPairRow {
  std::string a, b;                  // the new run's order when it has the pair
  std::string old_state, new_state;  // matrix state; "" = the pair is not in that report
  std::optional<double> old_gbit_s, new_gbit_s;
  std::optional<double> old_rtt_us, new_rtt_us;
  std::string old_source, new_source;
  std::optional<double> change_pct;        // (new / old - 1) * 100 when both figures are there
  std::optional<double> link_rate_gbit_s;  // the new run's
  bool regressed = false, rtt_regressed = false, lost = false;
  bool below_link_rate = false, below_median = false;
};

struct ClusterNodeRow {
  std::string host;
  std::string old_check, new_check;  // ok | failed; "" = not in that report
  int old_fail = 0, old_warn = 0, new_fail = 0, new_warn = 0;
  bool old_slow = false, new_slow = false;
  bool worse = false;
};

struct ClusterBaselineResult {
  std::vector<ClusterPairRow> pairs;    // the baseline's order, then pairs new in this run
  std::vector<ClusterNodeRow> nodes;    // likewise
  std::optional<double> median_gbit_s;  // of the new run's measured pairs (3 or more)
  std::vector<Finding> findings;
};

// Both documents must be cluster run reports (kind "cluster" with a "cluster" section holding
// "matrix" and "nodes"; a --plan-only report is not one). Throws std::invalid_argument naming the
// document ("old"/"new") and the field when one is not, or a figure has the wrong type.
ClusterBaselineResult compare_cluster_baseline(const Json& old_doc, const Json& new_doc,
                                               const ClusterBaselineOptions& o);

// Throws as compare_cluster_baseline does when doc is not a cluster run report, so that
// `fabcheck cluster --baseline FILE` refuses a wrong FILE before minutes of measuring.
void check_cluster_run_report(const Json& doc, const std::string& which);

// The "cluster_baseline" section (docs/json/cluster.md).
Json cluster_baseline_to_json(const ClusterBaselineResult& r, const ClusterBaselineOptions& o,
                              const std::string& old_path, const std::string& new_path);
// The figures side by side: one line per pair, the expected figures, one line per node.
std::string cluster_baseline_table_text(const ClusterBaselineResult& r,
                                        const ClusterBaselineOptions& o);

}  // namespace fabkit::reports::baseline
