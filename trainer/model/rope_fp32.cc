#include "trainer/model/rope_fp32.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "common/errors.h"

namespace fabkit::trainer {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kRowsPerTask = 64;

// One row of D: out[j] = x[j] * c[j] + x[(j + D/2) % D] * s[j], x read at stride xs.
void rope_row(const float* x, int64_t xs, const float* c, const float* s, float* out, int64_t d) {
  const int64_t half = d / 2;
  if (xs == 1) {  // the usual head layout: the loops vectorise
    for (int64_t j = 0; j < half; ++j) out[j] = x[j] * c[j] + x[j + half] * s[j];
    for (int64_t j = half; j < d; ++j) out[j] = x[j] * c[j] + x[j - half] * s[j];
    return;
  }
  for (int64_t j = 0; j < half; ++j) out[j] = x[j * xs] * c[j] + x[(j + half) * xs] * s[j];
  for (int64_t j = half; j < d; ++j) out[j] = x[j * xs] * c[j] + x[(j - half) * xs] * s[j];
}

// Rows are (b, h, t); the tables' row is (b or 0, t).
template <typename RowFn>
void for_rows(const at::Tensor& x, const at::Tensor& table, RowFn fn) {
  const int64_t b = x.size(0), h = x.size(1), t = x.size(2);
  const int64_t table_b = table.size(0);
  at::parallel_for(0, b * h * t, kRowsPerTask, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t bi = r / (h * t), hi = (r / t) % h, ti = r % t;
      fn(r, bi, hi, ti, (table_b == 1 ? 0 : bi) * t + ti);
    }
  });
}

class RopeFp32 : public torch::autograd::Function<RopeFp32> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& cos_in,
                            const at::Tensor& sin_in) {
    const at::Tensor cos = cos_in.contiguous(), sin = sin_in.contiguous();
    const int64_t d = x.size(3);
    at::Tensor out = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
    const float* xp = x.data_ptr<float>();
    const float* cp = cos.data_ptr<float>();
    const float* sp = sin.data_ptr<float>();
    float* op = out.data_ptr<float>();
    const int64_t s0 = x.stride(0), s1 = x.stride(1), s2 = x.stride(2), s3 = x.stride(3);
    for_rows(x, cos, [&](int64_t r, int64_t bi, int64_t hi, int64_t ti, int64_t tr) {
      rope_row(xp + bi * s0 + hi * s1 + ti * s2, s3, cp + tr * d, sp + tr * d, op + r * d, d);
    });
    ctx->save_for_backward({cos, sin});
    return out;
  }

  // dx[i] = g[i] * c[i] + g[σ(i)] * s[σ(i)] with σ(i) = (i + D/2) % D (σ is its own inverse).
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor& cos = saved[0];
    const at::Tensor& sin = saved[1];
    const at::Tensor g = grads[0].contiguous();
    const int64_t d = g.size(3), half = d / 2;
    at::Tensor dx = at::empty_like(g);
    const float* gp = g.data_ptr<float>();
    const float* cp = cos.data_ptr<float>();
    const float* sp = sin.data_ptr<float>();
    float* dp = dx.data_ptr<float>();
    for_rows(g, cos, [&](int64_t r, int64_t, int64_t, int64_t, int64_t tr) {
      const float* gr = gp + r * d;
      const float* c = cp + tr * d;
      const float* s = sp + tr * d;
      float* o = dp + r * d;
      for (int64_t j = 0; j < half; ++j) o[j] = gr[j] * c[j] + gr[j + half] * s[j + half];
      for (int64_t j = half; j < d; ++j) o[j] = gr[j] * c[j] + gr[j - half] * s[j - half];
    });
    return {dx, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor rope_fp32(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& signed_sin) {
  FABKIT_ENFORCE(x.is_cpu() && x.scalar_type() == at::kFloat && x.dim() == 4 && x.size(3) % 2 == 0,
                 "rope_fp32: CPU float32 [B, H, T, D] activations with an even D");
  FABKIT_ENFORCE(cos.sizes() == signed_sin.sizes() && cos.dim() == 4 && cos.size(1) == 1 &&
                     (cos.size(0) == 1 || cos.size(0) == x.size(0)) && cos.size(2) == x.size(2) &&
                     cos.size(3) == x.size(3) && cos.scalar_type() == at::kFloat &&
                     signed_sin.scalar_type() == at::kFloat,
                 "rope_fp32: cos and signed_sin must be float32 [1 or B, 1, T, D] beside x");
  return RopeFp32::apply(x, cos, signed_sin);
}

}  // namespace fabkit::trainer
