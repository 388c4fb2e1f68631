// Baselines for pair reports: a run compared with a saved one (busbw per transport and size) and
// with expected figures (peak busbw against the link rate). A pure judge: two parsed documents in,
// rows and findings out; rendering is baseline_text.cc and the JSON below.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"

namespace fabkit::reports::baseline {

struct BaselineOptions {
  double regression_pct = 10.0;        // fail when new busbw < old * (1 - pct/100)
  double expect_link_fraction = 0.90;  // warn when peak busbw * 8 < fraction * link rate; 0 = off
  // Below this, all-reduce time is latency (microseconds), which swings by more than 10% between
  // runs on a healthy fabric; such sizes are shown but not judged (docs/reports.md).
  uint64_t min_bytes = 1 << 20;
};

struct SizeRow {
  std::string transport;
  uint64_t bytes = 0;
  double old_busbw_gbps = 0, new_busbw_gbps = 0;
  double change_pct = 0;  // (new / old - 1) * 100
  bool judged = false;    // bytes >= min_bytes and old > 0
  bool regressed = false;
};

struct ExpectRow {
  std::string transport;
  double peak_busbw_gbps = 0;
  double link_rate_gbit_s = 0;
  double link_fraction = 0;  // peak * 8 / rate
  bool below = false;
};

struct BaselineResult {
  std::vector<SizeRow> rows;
  std::vector<ExpectRow> expected;
  std::vector<Finding> findings;
};

// Both documents must be pair reports (kind "pair"); throws std::invalid_argument naming the
// document ("old"/"new") and the field when one is not, or a figure has the wrong type.
BaselineResult compare_pair_baseline(const Json& old_doc, const Json& new_doc,
                                     const BaselineOptions& o);

// The "baseline" section of the report `fabcheck report --baseline --json` prints.
Json baseline_to_json(const BaselineResult& r, const BaselineOptions& o,
                      const std::string& old_path, const std::string& new_path);
// The figures side by side (one line per transport and size), then the expected figures.
std::string baseline_table_text(const BaselineResult& r, const BaselineOptions& o);

}  // namespace fabkit::reports::baseline
