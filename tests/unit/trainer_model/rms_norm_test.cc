// The fused fp32 RMSNorm against HF's op-by-op formula: values and both gradients.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "trainer/model/rms_norm_fp32.h"

namespace fabkit::trainer {
namespace {

torch::Tensor hf_rms_norm(const torch::Tensor& x, const torch::Tensor& w, double eps) {
  return w * (x * torch::rsqrt(x.pow(2).mean(-1, true) + eps));
}

void expect_close(const torch::Tensor& a, const torch::Tensor& b, const char* what) {
  const double scale = b.abs().max().item<double>();
  const double diff = (a - b).abs().max().item<double>();
  EXPECT_LE(diff, 2e-6 * scale + 1e-7) << what << ": max |diff| " << diff << " (max |ref| " << scale << ")";
}

void check(std::vector<int64_t> shape, double eps, int threads) {
  torch::manual_seed(3);
  at::set_num_threads(threads);
  const int64_t h = shape.back();
  auto x = (torch::randn(shape) * 3.0).requires_grad_(true);
  auto w = (torch::rand({h}) + 0.5).requires_grad_(true);
  auto g = torch::randn(shape);
  auto x2 = x.detach().clone().requires_grad_(true);
  auto w2 = w.detach().clone().requires_grad_(true);

  auto y = rms_norm_fp32(x, w, eps);
  y.backward(g);
  auto y_ref = hf_rms_norm(x2, w2, eps);
  y_ref.backward(g);
  expect_close(y, y_ref, "forward");
  expect_close(x.grad(), x2.grad(), "grad x");
  expect_close(w.grad(), w2.grad(), "grad weight");
  at::set_num_threads(1);
}

TEST(RmsNormFp32, MatchesHfFormulaForwardAndBackward) {
  check({4, 7, 32}, 1e-6, 1);
  check({3, 130, 48}, 1e-5, 2);  // more rows than one task: several threads, partial dw sums
  check({5, 16}, 1e-6, 1);
}

TEST(RmsNormFp32, NonContiguousInputAndNoGrad) {
  auto base = torch::randn({6, 32});
  auto x = base.t().contiguous().t();  // same values, transposed strides
  auto w = torch::rand({32}) + 0.5;
  torch::NoGradGuard no_grad;
  expect_close(rms_norm_fp32(x, w, 1e-6), hf_rms_norm(base, w, 1e-6), "non-contiguous forward");
}

TEST(RmsNormFp32, RefusesOtherDtypesAndShapes) {
  EXPECT_ANY_THROW(rms_norm_fp32(torch::randn({2, 8}).to(torch::kBFloat16), torch::ones({8}), 1e-6));
  EXPECT_ANY_THROW(rms_norm_fp32(torch::randn({2, 8}), torch::ones({7}), 1e-6));
}

}  // namespace
}  // namespace fabkit::trainer
