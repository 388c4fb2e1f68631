// RMSNorm for fp32 activations as one forward and one backward pass per row.
//
// HF's formula, weight * (x * rsqrt(mean(x^2) + eps)), costs ATen six element-wise ops forward and
// about twelve backward, each a full pass over the activations with its own allocation; the norm
// runs twice per decoder layer. LibTorch 1.13 has no fused RMSNorm (F.rms_norm arrived in 2.4),
// hence this hand-written kernel. The maths is HF's: the mean of squares is accumulated in double,
// so results differ from the op-by-op float path by rounding only (~1e-7 relative).
#pragma once

#include <ATen/core/Tensor.h>

namespace fabkit::trainer {

// x [..., H] fp32, weight [H] fp32. Differentiable in x and weight.
at::Tensor rms_norm_fp32(const at::Tensor& x, const at::Tensor& weight, double eps);

}  // namespace fabkit::trainer
