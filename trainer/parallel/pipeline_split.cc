#include "trainer/parallel/pipeline_split.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "common/errors.h"

namespace fabkit::trainer {

std::vector<int> balance_stage_layers(const std::vector<int64_t>& layer_params, int64_t first_extra,
                                      int64_t last_extra, int stages) {
  const int n = static_cast<int>(layer_params.size());
  if (stages < 1 || stages > n) {
    throw UsageError("--pp " + std::to_string(stages) +
                     " needs at least one decoder layer per stage, but the model has " +
                     std::to_string(n) + " layers: use --pp " +
                     std::to_string(std::max(1, std::min(stages, n))) + " or less");
  }
  std::vector<int64_t> prefix(static_cast<size_t>(n) + 1, 0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + layer_params[i];
  auto cost = [&](int s, int begin, int end) {
    return prefix[end] - prefix[begin] + (s == 0 ? first_extra : 0) +
           (s == stages - 1 ? last_extra : 0);
  };
  // best[s][i]: the smallest possible largest stage when stages 0..s-1 hold layers [0, i).
  // Exact (minimax over contiguous splits); L and S are small, so O(S L^2) is nothing.
  const int64_t inf = std::numeric_limits<int64_t>::max();
  std::vector<std::vector<int64_t>> best(static_cast<size_t>(stages) + 1,
                                         std::vector<int64_t>(n + 1, inf));
  std::vector<std::vector<int>> cut(static_cast<size_t>(stages) + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int s = 1; s <= stages; ++s) {
    for (int i = s; i <= n - (stages - s); ++i) {
      for (int j = s - 1; j < i; ++j) {
        if (best[s - 1][j] == inf) continue;
        const int64_t v = std::max(best[s - 1][j], cost(s - 1, j, i));
        if (v < best[s][i]) {  // strict: the earliest cut wins ties, so the split is deterministic
          best[s][i] = v;
          cut[s][i] = j;
        }
      }
    }
  }
  std::vector<int> counts(static_cast<size_t>(stages));
  for (int s = stages, i = n; s > 0; --s) {
    counts[s - 1] = i - cut[s][i];
    i = cut[s][i];
  }
  return counts;
}

std::vector<int> parse_stage_layers(const std::string& text, int layers, int stages) {
  std::vector<int> counts;
  std::stringstream ss(text);
  std::string item;
  int sum = 0;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || v < 1) {
      throw UsageError("--stage-layers " + text + ": '" + item +
                       "' is not a positive layer count (give one count per stage, e.g. 10,11,11)");
    }
    counts.push_back(v);
    sum += v;
  }
  if (static_cast<int>(counts.size()) != stages) {
    throw UsageError("--stage-layers " + text + " has " + std::to_string(counts.size()) +
                     " entries but --pp is " + std::to_string(stages) +
                     ": give one layer count per stage");
  }
  if (sum != layers) {
    throw UsageError("--stage-layers " + text + " sums to " + std::to_string(sum) +
                     " layers but the model has " + std::to_string(layers) +
                     ": the counts must add up to " + std::to_string(layers));
  }
  return counts;
}

std::vector<int> stage_layer_starts(const std::vector<int>& counts) {
  std::vector<int> starts(1, 0);
  for (int c : counts) starts.push_back(starts.back() + c);
  return starts;
}

}  // namespace fabkit::trainer
