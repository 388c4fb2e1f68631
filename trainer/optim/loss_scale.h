// Dynamic loss scaling for fp16 compute (torch.cuda.amp.GradScaler's rule): fp16's range ends at
// 65504 and its smallest normal is 6e-5, so small gradients vanish unless the loss is scaled up
// before the backward. A step whose gradients came out non-finite (the scale overflowed) is
// skipped and the scale halved; after `window` good steps in a row it is doubled. Plain C++ on
// the fp32 shards; the scale and its count travel in checkpoints.
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/parallel/flat_shard.h"

namespace fabkit::trainer {

struct DynamicLossScale {
  double scale = 65536.0;
  int64_t good_steps = 0;  // finite steps since the scale last changed
  int64_t window = 2000;

  // After a step's backward: whether the gradients (every rank's) were finite. Returns true when
  // the step is to be applied (the gradients must then be divided by the scale in use before).
  bool update(bool all_finite);
};

// True when every gradient element of every shard is finite.
bool grads_finite(const std::vector<FlatShard>& shards);
void scale_grads(std::vector<FlatShard>& shards, float factor);

}  // namespace fabkit::trainer
