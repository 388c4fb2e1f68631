// What the pipeline tests (fabtrain_pipeline_test.cc, fabtrain_pipeline_schedules_test.cc) share:
// the flags of a run on a test folder's model and data, the tolerances a pipelined run is held
// to against the 1-process run, and a per-stage metric's peak.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/integration/trainer/run_support.h"

namespace fabkit::testing {

// DIR/model, DIR/train.jsonl, OUTPUT DIR/out: fp32 AdamW at lr 3e-3 after one warm-up step,
// seed 1, on the CPU, then `more`.
inline std::vector<std::string> pipeline_run_args(const std::filesystem::path& dir,
                                                  const std::string& out, int steps, int max_length,
                                                  const std::vector<std::string>& more) {
  std::vector<std::string> a = {"--model",
                                (dir / "model").string(),
                                "--data",
                                (dir / "train.jsonl").string(),
                                "--output",
                                (dir / out).string(),
                                "--max-length",
                                std::to_string(max_length),
                                "--max-steps",
                                std::to_string(steps),
                                "--lr",
                                "3e-3",
                                "--warmup-steps",
                                "1",
                                "--seed",
                                "1",
                                "--collective-timeout-ms",
                                "20000",
                                "--device",
                                "cpu"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// Tolerances (as fabtrain_run_test.cc's): a pipelined run runs the 1-process run's ops on the
// same micro-batches, but adds the micro-batches' gradients into the shards in the schedule's
// order (GPipe backwards in reverse; a split backward adds a layer's weight gradients after its
// norm's) and through fp32 activations on the wire; that reorders fp32 additions (1e-7 relative
// per op). Losses then agree to ~1e-6 relative; AdamW's division by sqrt(v) amplifies noise only
// where |g| is near eps, far below one step of lr = 3e-3.
constexpr double kPipelineLossRelTol = 1e-4;
constexpr double kPipelineWeightTol = 1e-4;

inline void expect_same_curve(const std::vector<double>& a, const std::vector<double>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], kPipelineLossRelTol * std::abs(b[i])) << "step " << i + 1;
}

// The largest value of a per-stage metric over all of a run's steps.
inline int64_t stage_peak(const std::filesystem::path& out, const char* field, int stage) {
  int64_t peak = 0;
  for (const auto& j : steps_of(out)) peak = std::max(peak, j[field].at(stage).get<int64_t>());
  return peak;
}

}  // namespace fabkit::testing
