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
// Counting the tokens reads a device scalar back to the host (a sync on a GPU): evaluation wants
// the count; the training step uses causal_lm_loss_sum, which never leaves the device.
LmLoss causal_lm_loss(const at::Tensor& logits, const at::Tensor& labels);
// The summed token cross-entropy alone (keeps the graph), without the host-side token count.
at::Tensor causal_lm_loss_sum(const at::Tensor& logits, const at::Tensor& labels);

}  // namespace fabkit::trainer
