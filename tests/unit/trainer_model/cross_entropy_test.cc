// The fused CPU cross-entropy (cross_entropy_cpu.h) against the op-by-op formula it replaces
// (fp32 log_softmax, gather, the ignore mask, sum): the loss and the logits' gradient, in fp32
// and from bf16 logits, with ignored rows and logits far from 0.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/errors.h"
#include "trainer/model/cross_entropy_cpu.h"
#include "trainer/model/ignore_label.h"

namespace fabkit::trainer {
namespace {

at::Tensor op_by_op_sum(const at::Tensor& logits, const at::Tensor& targets) {
  auto keep = targets != kIgnoreLabel;
  auto logp = at::log_softmax(logits.to(at::kFloat), -1);
  auto safe = at::where(keep, targets, at::zeros_like(targets));
  return (-logp.gather(1, safe.unsqueeze(1)).squeeze(1) * keep.to(at::kFloat)).sum();
}

void expect_close(const at::Tensor& a, const at::Tensor& b, double rtol, const char* what) {
  const double scale = b.abs().max().item<double>();
  const double diff = (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
  EXPECT_LE(diff, rtol * scale + 1e-9)
      << what << ": max |diff| " << diff << " (max |ref| " << scale << ")";
}

void check(at::ScalarType dtype, int64_t rows, int64_t vocab, double spread, int threads) {
  torch::manual_seed(11);
  at::set_num_threads(threads);
  // Logits shifted far from 0 (a softmax that did not subtract the row max would overflow).
  auto base = (torch::randn({rows, vocab}) * spread + 40.0).to(dtype);
  auto targets = torch::randint(0, vocab, {rows}, at::kLong);
  targets[1] = kIgnoreLabel;
  targets[rows - 1] = kIgnoreLabel;
  auto a = base.detach().clone().requires_grad_(true);
  auto b = base.detach().clone().requires_grad_(true);
  auto fused = cross_entropy_sum_cpu(a, targets, kIgnoreLabel);
  auto ref = op_by_op_sum(b, targets);
  EXPECT_EQ(fused.scalar_type(), at::kFloat);
  EXPECT_NEAR(fused.item<double>(), ref.item<double>(), 2e-6 * std::abs(ref.item<double>()));
  (fused * 0.37).backward();
  (ref * 0.37).backward();
  EXPECT_EQ(a.grad().scalar_type(), dtype);
  // fp32: both sides form x - logsumexp in fp32, whose rounding at |x| ~ 40-70 (ulp 4-8e-6) is
  // the softmax's relative error on either side; bf16: both are rounded to bf16 from fp32 values
  // a few ulp apart.
  expect_close(a.grad(), b.grad(), dtype == at::kFloat ? 1e-5 : 8e-3, "grad logits");
  EXPECT_EQ(a.grad()[1].abs().max().item<float>(), 0.0f) << "an ignored row has no gradient";
  at::set_num_threads(1);
}

TEST(CrossEntropyCpu, MatchesOpByOpFp32) { check(at::kFloat, 37, 4099, 3.0, 1); }
TEST(CrossEntropyCpu, MatchesOpByOpFp32Threads) { check(at::kFloat, 70, 515, 8.0, 2); }
TEST(CrossEntropyCpu, MatchesOpByOpFromBf16Logits) { check(at::kBFloat16, 19, 1031, 3.0, 1); }

TEST(CrossEntropyCpu, TargetOutsideVocabularyIsRefusedByName) {
  auto logits = torch::randn({3, 5});
  auto targets = torch::tensor(std::vector<int64_t>{0, 5, 1});
  try {
    cross_entropy_sum_cpu(logits, targets, kIgnoreLabel);
    FAIL() << "target 5 of a 5-token vocabulary was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("target 5 at row 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fabkit::trainer
