// The trained weights of a run, read back from its newest checkpoint, and how far two runs' weights
// are apart: the pipeline and on-device tests compare runs that must train the same model.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "trainer/checkpoint/checkpoint.h"

namespace fabkit::testing {

// Where stage `stage` of a `stages`-stage pipeline run under `out` writes its checkpoints.
inline std::filesystem::path stage_dir(const std::filesystem::path& out, int stage, int stages) {
  return out / ("pipeline-stage-" + std::to_string(stage) + "-of-" + std::to_string(stages));
}

// Every parameter by name, from the newest checkpoint of a 1-process run, or of every stage's.
inline std::map<std::string, std::vector<float>> checkpoint_weights(
    const std::filesystem::path& out, int stages) {
  std::map<std::string, std::vector<float>> w;
  for (int s = 0; s < stages; ++s) {
    const std::filesystem::path dir = stages == 1 ? out : stage_dir(out, s, stages);
    for (auto& [name, t] :
         trainer::gather_checkpoint(trainer::list_checkpoints(dir).at(0)).params) {
      EXPECT_TRUE(w.emplace(name, t.values).second) << name << " saved twice";
    }
  }
  return w;
}

// The largest absolute difference of any weight; a parameter missing on one side is a failure.
inline double max_weight_diff(const std::map<std::string, std::vector<float>>& a,
                              const std::map<std::string, std::vector<float>>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (const auto& [name, x] : a) {
    auto it = b.find(name);
    if (it == b.end()) {
      ADD_FAILURE() << name << " missing";
      continue;
    }
    EXPECT_EQ(x.size(), it->second.size()) << name;
    for (size_t k = 0; k < x.size() && k < it->second.size(); ++k)
      worst = std::max(worst, std::abs(double(x[k]) - it->second[k]));
  }
  return worst;
}

}  // namespace fabkit::testing
