// Summed token cross-entropy on the CPU as one autograd function: one pass over the logits
// forward (row max, then the sum of exponentials) and one backward (softmax minus the target,
// written once), read in the logits' own dtype. The op-by-op form (log_softmax, gather, the
// mask) writes a full fp32 log-probability block forward, and its backward zero-fills and
// scatters a gradient of that size before log_softmax's backward reads both again.
#pragma once

#include <ATen/ATen.h>

namespace fabkit::trainer {

// Whether cross_entropy_sum_cpu takes these logits: CPU, [N, V], float32 or bfloat16.
bool cross_entropy_cpu_supports(const at::Tensor& logits);

// sum over rows n with targets[n] != ignore of logsumexp(logits[n]) - logits[n, targets[n]], as
// an fp32 scalar (accumulated in double). logits [N, V] float32 or bfloat16 (the softmax runs in
// fp32, as the op-by-op path's upcast did), targets [N] int64; a target outside [0, V) other
// than `ignore` is refused by name. Differentiable in the logits; the gradient has their dtype.
at::Tensor cross_entropy_sum_cpu(const at::Tensor& logits, const at::Tensor& targets,
                                 int64_t ignore);

}  // namespace fabkit::trainer
