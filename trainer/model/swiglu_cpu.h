// SwiGLU's element-wise part on fp32 host rows, fused: swiglu_mlp.cc's forward and backward on
// the CPU. Op by op, the forward runs silu then the product (two passes) and the backward five
// (silu again, the product for down_proj's gradient, d up, dh ⊙ up, silu's backward, which takes
// the sigmoid a second time); here each is one pass with one sigmoid an element. In the CPU
// bench (docs/fabtrain.md "Benchmark") these passes were ~8 ms of a ~145 ms step.
//
// gate_up: [rows, 2I] with gate = columns [0, I), up = [I, 2I) (the one GEMM's output), row-major
// and contiguous. The formulas are ATen's (silu = g·σ(g), silu' = σ(g)·(1 + g·(1 − σ(g)))) with σ
// taken as 1/(1 + e^−|g|) or e^−|g|/(1 + e^−|g|) (no overflow either side): within a few ulp of
// ATen's silu / silu_backward, not bit-equal.
#pragma once

#include <cstdint>

namespace fabkit::trainer {

// h[r, i] = silu(gate[r, i]) · up[r, i]; h is [rows, I].
void swiglu_forward_fp32(const float* gate_up, float* h, int64_t rows, int64_t inter);

// From dh = dL/dh [rows, I]: d_gate_up [rows, 2I] (d gate, then d up, per row), and when h is not
// null the forward's h again (down_proj's weight gradient reads it).
void swiglu_backward_fp32(const float* gate_up, const float* dh, float* d_gate_up, float* h,
                          int64_t rows, int64_t inter);

}  // namespace fabkit::trainer
