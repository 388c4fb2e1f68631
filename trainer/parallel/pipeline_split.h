// Which decoder layers each pipeline stage runs. The embedding always goes with the first stage
// and the final norm + head (+ loss) with the last, so a balanced split counts them too.
// Plain C++ (unit-tested without torch).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fabkit::trainer {

// Contiguous layer counts per stage (each >= 1) that minimise the largest stage's parameter
// count: stage s holds layers [sum(counts[<s]), +counts[s]), plus first_extra on stage 0 and
// last_extra on stage S-1. Throws UsageError when there are fewer layers than stages.
std::vector<int> balance_stage_layers(const std::vector<int64_t>& layer_params, int64_t first_extra,
                                      int64_t last_extra, int stages);

// "--stage-layers 10,11,11": S positive counts that sum to the layer count; UsageError naming the
// value and what it must be otherwise.
std::vector<int> parse_stage_layers(const std::string& text, int layers, int stages);

// The first layer of every stage (size S + 1: the last entry is the layer count).
std::vector<int> stage_layer_starts(const std::vector<int>& counts);

}  // namespace fabkit::trainer
