// What every shard optimizer shares.
#include <algorithm>

#include "common/errors.h"
#include "trainer/optim/loss_scale.h"
#include "trainer/optim/optimizer.h"

namespace fabkit::trainer {

void ShardOptimizer::step_scaled(std::vector<FlatShard>& shards, double lr, float grad_scale) {
  if (grad_scale != 1.0f) scale_grads(shards, grad_scale);
  step(shards, lr);
}

std::vector<const std::vector<float>*> arrays_named(const std::vector<std::vector<NamedArray>>& old_ranks,
                                                    const std::string& name) {
  std::vector<const std::vector<float>*> out;
  for (size_t r = 0; r < old_ranks.size(); ++r) {
    auto it = std::find_if(old_ranks[r].begin(), old_ranks[r].end(), [&](const NamedArray& a) { return a.name == name; });
    if (it == old_ranks[r].end()) {
      throw UsageError("optimizer state of old rank " + std::to_string(r) + " has no array '" + name + "'");
    }
    out.push_back(&it->values);
  }
  return out;
}

}  // namespace fabkit::trainer
