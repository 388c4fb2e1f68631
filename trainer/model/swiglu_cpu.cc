#include "trainer/model/swiglu_cpu.h"

#include <ATen/Parallel.h>

#include <cmath>

#include "trainer/model/cpu_vec.h"

namespace fabkit::trainer {
namespace {

using namespace cpu_vec;  // VecF, load/store/splat, exp_nonpositive

constexpr int64_t kRowsPerTask = 8;

// σ(g) from e = e^−|g| (never an overflow): 1/(1+e) for g >= 0, e/(1+e) below.
FABKIT_VEC_INLINE VecF sigmoid(VecF g) {
  const VecF e = exp_nonpositive(g < 0 ? g : -g);
  const VecF r = 1.0f / (1.0f + e);
  return g >= 0 ? r : e * r;
}
float sigmoid(float g) {
  const float e = std::exp(-std::fabs(g));
  const float r = 1.0f / (1.0f + e);
  return g >= 0 ? r : e * r;
}

FABKIT_VEC_CLONES
void forward_row(const float* g, const float* u, float* h, int64_t n) {
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const VecF gv = load(g + j);
    store(h + j, gv * sigmoid(gv) * load(u + j));
  }
  for (; j < n; ++j) h[j] = g[j] * sigmoid(g[j]) * u[j];
}

// ATen's order of operations: d up = dh · silu(g); d gate = ((dh · u) · σ) · (1 + g·(1 − σ)).
FABKIT_VEC_CLONES
void backward_row(const float* g, const float* u, const float* dh, float* dg, float* du, float* h,
                  int64_t n) {
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const VecF gv = load(g + j), uv = load(u + j), dhv = load(dh + j);
    const VecF s = sigmoid(gv);
    const VecF silu = gv * s;
    store(du + j, dhv * silu);
    store(dg + j, dhv * uv * s * (splat(1.0f) + gv * (splat(1.0f) - s)));
    if (h) store(h + j, silu * uv);
  }
  for (; j < n; ++j) {
    const float s = sigmoid(g[j]);
    const float silu = g[j] * s;
    du[j] = dh[j] * silu;
    dg[j] = dh[j] * u[j] * s * (1.0f + g[j] * (1.0f - s));
    if (h) h[j] = silu * u[j];
  }
}

}  // namespace

void swiglu_forward_fp32(const float* gate_up, float* h, int64_t rows, int64_t inter) {
  at::parallel_for(0, rows, kRowsPerTask, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* g = gate_up + r * 2 * inter;
      forward_row(g, g + inter, h + r * inter, inter);
    }
  });
}

void swiglu_backward_fp32(const float* gate_up, const float* dh, float* d_gate_up, float* h,
                          int64_t rows, int64_t inter) {
  at::parallel_for(0, rows, kRowsPerTask, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* g = gate_up + r * 2 * inter;
      float* dg = d_gate_up + r * 2 * inter;
      backward_row(g, g + inter, dh + r * inter, dg, dg + inter, h ? h + r * inter : nullptr,
                   inter);
    }
  });
}

}  // namespace fabkit::trainer
