// RoPE on fp32 CPU activations as one autograd function: HF's x * cos + rotate_half(x) * sin with
// rotate_half's sign folded into signed_sin ([-sin | +sin]), read from q/k's strided views of the
// qkv GEMM output and written once, contiguous, forward; one pass backward. The op-by-op form
// (mul, roll, addcmul) made three passes forward and, backward, a roll back, two products and an
// add of the two paths into the input's gradient.
#pragma once

#include <ATen/ATen.h>

namespace fabkit::trainer {

// x [B, H, T, D] (any strides), cos and signed_sin [1 or B, 1, T, D] float32; returns
// x * cos + roll(x, D/2, -1) * signed_sin, contiguous, differentiable in x.
at::Tensor rope_fp32(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& signed_sin);

}  // namespace fabkit::trainer
