// The Llama MLP, down(silu(x·gateᵀ) ⊙ (x·upᵀ)), as one autograd function.
//
// Op by op, autograd keeps per layer: x, a [2I,H] copy of the concatenated gate/up weights, the
// gate/up product [N,2I], silu(gate) [N,I] and the product h [N,I] (N tokens, I intermediate).
// This function keeps x and the gate/up product only: silu and h are recomputed in the backward
// (element-wise, cheap beside the GEMMs), and when gate and up lie back to back in one buffer
// (a sharded unit's flat parameters, where HF's order puts up_proj right after gate_proj) the one
// GEMM reads them through a [2I,H] view instead of a copy. LibTorch has no fused SwiGLU op: fp32
// on the CPU runs the element-wise part as fused passes (swiglu_cpu.h); elsewhere only ATen ops
// run here, so it works on any device. Figures: docs/trainer-model.md "SwiGLU".
#pragma once

#include <ATen/core/Tensor.h>

namespace fabkit::trainer {

// x [..., H]; gate_w, up_w [I, H]; down_w [H, I], all one dtype. Differentiable in all four; the
// same values as the op-by-op formula (same ATen ops, same rounding) in every dtype but fp32 on
// the CPU, where the fused passes' sigmoid is within a few ulp of ATen's.
at::Tensor swiglu_mlp(const at::Tensor& x, const at::Tensor& gate_w, const at::Tensor& up_w,
                      const at::Tensor& down_w);

// [first rows + second rows, cols] aliasing both when `second` starts where `first` ends in one
// storage (both contiguous, same dtype, device and width); undefined otherwise. No grad history.
at::Tensor adjacent_rows_view(const at::Tensor& first, const at::Tensor& second);

}  // namespace fabkit::trainer
