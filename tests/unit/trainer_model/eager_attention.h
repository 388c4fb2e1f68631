// HF's eager attention (repeat_kv, q.k^T * scale, mask, softmax in fp32, cast back, times v), kept
// only as the reference the fused path (trainer/model/attention.h) is checked against.
#pragma once

#include <optional>

#include <ATen/core/Tensor.h>

namespace fabkit::trainer {

// Same arguments as causal_attention: mask undefined = causal; else bool, true = attend.
at::Tensor eager_attention_reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                     const at::Tensor& mask, std::optional<double> scale);

}  // namespace fabkit::trainer
