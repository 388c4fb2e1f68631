// Stacks examples into the tensors the model and loss take.
#pragma once

#include <cstddef>
#include <vector>

#include <ATen/ATen.h>

#include "trainer/data/dataset.h"

namespace fabkit::trainer {

struct Batch {
  at::Tensor input_ids;       // [B,T] int64
  at::Tensor labels;          // [B,T] int64, -100 = not counted
  at::Tensor attention_mask;  // [B,T] int64, 1 = token
};

Batch make_batch(const std::vector<Example>& examples, const std::vector<size_t>& indices);

}  // namespace fabkit::trainer
