// Causal self-attention through ATen's fused scaled_dot_product_attention, so torch picks its best
// kernel for the device, dtype and shape: flash / memory-efficient / cuDNN on a GPU, the flash
// kernel on CPU. None of them materialises the [B, heads, T, T] scores and probabilities that an
// eager matmul -> mask -> softmax -> matmul keeps for the backward.
#pragma once

#include <optional>

#include <ATen/core/Tensor.h>

namespace fabkit::trainer {

// q [B, heads, T, D], k and v [B, kv_heads, T, D] with heads a multiple of kv_heads (grouped
// query attention: query head h reads kv head h / (heads / kv_heads), without copying k/v).
// mask: undefined = causal only (is_causal, which lets the GPU use flash attention); else a bool
// [B or 1, 1, T, T], true = the query may attend the key, already causal (see
// LlamaModelImpl::attention_bias), with no row fully false (those rows are unmasked there).
// scale: multiplies q.k; nullopt = 1/sqrt(D).
at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const at::Tensor& mask, std::optional<double> scale);

}  // namespace fabkit::trainer
