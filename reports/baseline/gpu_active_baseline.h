// Node baselines for the active GPU check: each GPU figure and all-reduce busbw of a saved node
// report (with `gpu_active`) against the new one. A pure judge, like node_baseline.h, which calls
// it; nothing when neither report ran the check.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"

namespace fabkit::reports::baseline {

// A drop of more than this (percent of the baseline figure) fails, as a pair's busbw does
// (PairBaselineOptions::regression_pct): healthy reruns move by a few percent.
inline constexpr double kGpuActiveDropPct = 10.0;

struct GpuActiveRow {
  std::string subject;  // "GPU 0000:18:00.0" or "all-reduce Ring"
  std::string figure;   // "gemm_bf16", "h2d", ... "busbw"
  std::string unit;     // "TFLOPS", "GB/s"
  std::optional<double> old_value, new_value;
};

struct GpuActiveBaseline {
  bool present = false;  // either report has a gpu_active section
  std::vector<GpuActiveRow> rows;
  std::vector<Finding> findings;
};

// Throws std::invalid_argument naming the document ("old"/"new") and field of a wrong type.
GpuActiveBaseline compare_gpu_active(const Json& old_doc, const Json& new_doc);
Json gpu_active_baseline_json(const GpuActiveBaseline& b);
std::string gpu_active_baseline_text(const GpuActiveBaseline& b);

}  // namespace fabkit::reports::baseline
