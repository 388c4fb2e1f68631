// Causal language-model loss with HF's label convention: labels are aligned with input_ids, the
// logits at position t predict labels[t+1], and -100 marks a position that does not count.
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

#include "trainer/model/ignore_label.h"

namespace fabkit::trainer {

struct LmLoss {
  at::Tensor sum;      // fp32 scalar: summed token cross-entropy (keeps the graph)
  int64_t tokens = 0;  // counted target tokens
  at::Tensor mean() const { return tokens > 0 ? sum / static_cast<double>(tokens) : sum; }
};

// logits [B,T,V] (any float dtype; the softmax runs in fp32), labels [B,T] int64.
LmLoss causal_lm_loss(const at::Tensor& logits, const at::Tensor& labels);

}  // namespace fabkit::trainer
