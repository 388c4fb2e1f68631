#include "trainer/model/rms_norm_fp32.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "common/errors.h"

namespace fabkit::trainer {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Rows per parallel task: a row is H floats (hundreds to thousands), so 64 rows amortise the
// task overhead without starving threads on a small batch.
constexpr int64_t kRowsPerTask = 64;

class RmsNormFp32 : public torch::autograd::Function<RmsNormFp32> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x_in, const at::Tensor& weight, double eps) {
    const at::Tensor x = x_in.contiguous();
    const at::Tensor w = weight.contiguous();
    const int64_t h = x.size(-1);
    const int64_t rows = x.numel() / h;
    at::Tensor y = at::empty_like(x);
    at::Tensor rstd = at::empty({rows}, x.options());
    const float* xp = x.data_ptr<float>();
    const float* wp = w.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    float* rp = rstd.data_ptr<float>();
    at::parallel_for(0, rows, kRowsPerTask, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* xr = xp + r * h;
        double ss = 0.0;
        for (int64_t j = 0; j < h; ++j) ss += static_cast<double>(xr[j]) * xr[j];
        const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(h) + eps));
        rp[r] = inv;
        float* yr = yp + r * h;
        for (int64_t j = 0; j < h; ++j) yr[j] = wp[j] * (xr[j] * inv);
      }
    });
    ctx->save_for_backward({x, w, rstd});
    return y;
  }

  // y = w * n with n = x * r, r = (mean(x^2) + eps)^-1/2:
  //   dx = r * (dn - n * mean(dn * n)) with dn = dy * w;   dw = sum over rows of dy * n.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& w = saved[1];
    const at::Tensor& rstd = saved[2];
    const at::Tensor dy = grads[0].contiguous();
    const int64_t h = x.size(-1);
    const int64_t rows = x.numel() / h;
    at::Tensor dx = at::empty_like(x);
    const float* xp = x.data_ptr<float>();
    const float* wp = w.data_ptr<float>();
    const float* rp = rstd.data_ptr<float>();
    const float* gp = dy.data_ptr<float>();
    float* dxp = dx.data_ptr<float>();
    // dw: one partial sum per thread, added at the end (deterministic for a fixed thread count).
    const int threads = at::get_num_threads();
    std::vector<double> partial(static_cast<size_t>(threads) * h, 0.0);
    at::parallel_for(0, rows, kRowsPerTask, [&](int64_t begin, int64_t end) {
      double* dw = partial.data() + static_cast<size_t>(at::get_thread_num()) * h;
      for (int64_t r = begin; r < end; ++r) {
        const float* xr = xp + r * h;
        const float* gr = gp + r * h;
        const float inv = rp[r];
        double dot = 0.0;
        for (int64_t j = 0; j < h; ++j) {
          const float n = xr[j] * inv;
          dot += static_cast<double>(gr[j] * wp[j]) * n;
          dw[j] += static_cast<double>(gr[j]) * n;
        }
        const float mean_dot = static_cast<float>(dot / static_cast<double>(h));
        float* dxr = dxp + r * h;
        for (int64_t j = 0; j < h; ++j) dxr[j] = inv * (gr[j] * wp[j] - (xr[j] * inv) * mean_dot);
      }
    });
    at::Tensor dw = at::empty({h}, w.options());
    float* dwp = dw.data_ptr<float>();
    for (int64_t j = 0; j < h; ++j) {
      double s = 0.0;
      for (int t = 0; t < threads; ++t) s += partial[static_cast<size_t>(t) * h + j];
      dwp[j] = static_cast<float>(s);
    }
    return {dx, dw, at::Tensor()};
  }
};

}  // namespace

at::Tensor rms_norm_fp32(const at::Tensor& x, const at::Tensor& weight, double eps) {
  FABKIT_ENFORCE(x.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat,
                 "rms_norm_fp32: fp32 activations and weight only");
  FABKIT_ENFORCE(weight.dim() == 1 && x.dim() >= 1 && x.size(-1) == weight.size(0),
                 "rms_norm_fp32: weight [H] must match the last dimension of x");
  return RmsNormFp32::apply(x, weight, eps);
}

}  // namespace fabkit::trainer
