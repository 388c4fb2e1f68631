#include "trainer/optim/loss_scale.h"

#include <cmath>

namespace fabkit::trainer {

bool DynamicLossScale::update(bool all_finite) {
  if (!all_finite) {
    scale /= 2.0;
    good_steps = 0;
    return false;
  }
  if (++good_steps >= window) {
    scale *= 2.0;
    good_steps = 0;
  }
  return true;
}

bool grads_finite(const std::vector<FlatShard>& shards) {
  for (const auto& s : shards) {
    for (float g : s.grad) {
      if (!std::isfinite(g)) return false;
    }
  }
  return true;
}

void scale_grads(std::vector<FlatShard>& shards, float factor) {
  for (auto& s : shards) {
    for (float& g : s.grad) g *= factor;
  }
}

}  // namespace fabkit::trainer
