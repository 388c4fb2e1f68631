// The fused attention path (SDPA), the attention mask, the RoPE table cache and the RMSNorm paths
// against HF's eager formulas on CPU: fp32 tight, bf16 within its rounding, and fp16 masking that
// stays finite.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "tests/unit/trainer_model/eager_attention.h"
#include "trainer/model/attention.h"
#include "trainer/model/llama.h"

namespace fabkit::trainer {
namespace {

LlamaConfig config(int64_t heads, int64_t kv_heads, std::optional<int64_t> window = std::nullopt) {
  Json j = {{"hidden_size", 8 * heads},
            {"intermediate_size", 48},
            {"num_hidden_layers", 2},
            {"num_attention_heads", heads},
            {"num_key_value_heads", kv_heads},
            {"vocab_size", 97},
            {"pad_token_id", 0},
            {"eos_token_id", 2}};
  LlamaConfig c = parse_llama_config(j, "test");
  c.sliding_window = window;
  return c;
}

// max |a - b| <= rel * max |b| (+ a tiny floor for all-zero references).
void expect_close(const torch::Tensor& a, const torch::Tensor& b, double rel,
                  const std::string& what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  const auto af = a.to(torch::kFloat64), bf = b.to(torch::kFloat64);
  const double scale = bf.abs().max().item<double>();
  const double diff = (af - bf).abs().max().item<double>();
  EXPECT_LE(diff, rel * scale + 1e-12)
      << what << ": max |diff| " << diff << ", max |ref| " << scale;
}

struct Case {
  int64_t heads, kv_heads;
  std::optional<int64_t> window;
  bool padded;
};

std::string name(const Case& c, torch::ScalarType dtype) {
  return std::string(c10::toString(dtype)) + " heads " + std::to_string(c.heads) + "/" +
         std::to_string(c.kv_heads) + (c.window ? " window " + std::to_string(*c.window) : "") +
         (c.padded ? " padded" : "");
}

// Forward and the three input gradients of the fused path against the eager reference, with the
// mask the model builds for the case.
void check_against_eager(const Case& c, torch::ScalarType dtype, double rel) {
  torch::manual_seed(11);
  const int64_t b = 2, t = 13, d = 16;
  LlamaModel model(config(c.heads, c.kv_heads, c.window), dtype);
  torch::Tensor attention_mask;
  if (c.padded) {
    attention_mask = torch::ones({b, t}, torch::kInt64);
    attention_mask.index_put_({1, torch::indexing::Slice(9)}, 0);     // right padding
    attention_mask.index_put_({0, torch::indexing::Slice(0, 3)}, 0);  // left padding: empty rows
  }
  const torch::Tensor mask = model->attention_bias(t, attention_mask);
  EXPECT_EQ(mask.defined(), c.padded || c.window.has_value()) << name(c, dtype);
  auto make = [&](int64_t heads) {
    return torch::randn({b, heads, t, d}).to(dtype).requires_grad_(true);
  };
  auto q = make(c.heads), k = make(c.kv_heads), v = make(c.kv_heads);
  auto q2 = q.detach().clone().requires_grad_(true), k2 = k.detach().clone().requires_grad_(true),
       v2 = v.detach().clone().requires_grad_(true);
  auto grad = torch::randn({b, c.heads, t, d}).to(dtype);

  auto out = causal_attention(q, k, v, mask, std::nullopt);
  out.backward(grad);
  auto ref = eager_attention_reference(q2, k2, v2, mask, std::nullopt);
  ref.backward(grad);
  const std::string what = name(c, dtype);
  expect_close(out, ref, rel, what + " forward");
  expect_close(q.grad(), q2.grad(), rel, what + " grad q");
  expect_close(k.grad(), k2.grad(), rel, what + " grad k");
  expect_close(v.grad(), v2.grad(), rel, what + " grad v");
}

const std::vector<Case> kCases = {
    {4, 4, std::nullopt, false},  // MHA, causal only
    {4, 2, std::nullopt, false},  // GQA
    {4, 1, std::nullopt, false},  // MQA
    {4, 2, std::nullopt, true},   // GQA with left and right padding
    {4, 2, 5, false},             // Mistral window shorter than the sequence
    {4, 4, 5, true},              // window and padding
};

TEST(FusedAttention, MatchesEagerInFp32) {
  for (const Case& c : kCases) check_against_eager(c, torch::kFloat32, 2e-6);
}

TEST(FusedAttention, MatchesEagerInBf16WithinRounding) {
  // The eager path rounds the scores and the probabilities to bf16; the fused kernel keeps them in
  // fp32: a few bf16 ulps (2^-8 relative each) apart.
  for (const Case& c : kCases) check_against_eager(c, torch::kBFloat16, 3e-2);
}

TEST(FusedAttention, UnmaskedCausalMatchesExplicitCausalMask) {
  torch::manual_seed(5);
  auto q = torch::randn({1, 4, 7, 8}), k = torch::randn({1, 2, 7, 8}),
       v = torch::randn({1, 2, 7, 8});
  auto causal = torch::ones({7, 7}, torch::kBool).tril().view({1, 1, 7, 7});
  expect_close(causal_attention(q, k, v, {}, std::nullopt),
               causal_attention(q, k, v, causal, std::nullopt), 1e-6, "is_causal vs bool mask");
  // The scale argument reaches the kernel.
  expect_close(causal_attention(q * 0.5, k, v, {}, 1.0), causal_attention(q, k, v, {}, 0.5), 1e-6,
               "scale");
}

TEST(AttentionMask, NoMaskWhenPlainCausalIsExact) {
  LlamaModel llama(config(4, 2));
  EXPECT_FALSE(llama->attention_bias(9).defined());
  EXPECT_FALSE(llama->attention_bias(9, torch::ones({3, 9}, torch::kInt64)).defined());
  LlamaModel mistral(config(4, 2, 9));
  EXPECT_FALSE(mistral->attention_bias(9).defined()) << "a window >= seq_len masks nothing";
  auto window = mistral->attention_bias(10);
  ASSERT_TRUE(window.defined());
  EXPECT_EQ(window.scalar_type(), torch::kBool);
  EXPECT_EQ(window.sizes(), (std::vector<int64_t>{1, 1, 10, 10}));
  EXPECT_FALSE(window[0][0][9][0].item<bool>());  // 9 positions back: outside the window
  EXPECT_TRUE(window[0][0][9][1].item<bool>());
  EXPECT_FALSE(window[0][0][3][4].item<bool>());  // the future
}

TEST(AttentionMask, PaddingMasksKeysAndLeavesNoEmptyRow) {
  LlamaModel m(config(4, 2));
  auto attention_mask =
      torch::tensor(std::vector<int64_t>{0, 0, 1, 1, 1, 1, 1, 1, 1, 0}).view({2, 5});
  auto mask = m->attention_bias(5, attention_mask);
  ASSERT_TRUE(mask.defined());
  EXPECT_EQ(mask.sizes(), (std::vector<int64_t>{2, 1, 5, 5}));
  // Row 0 is left padded: queries 0 and 1 see no token; they attend everything instead of nothing.
  EXPECT_TRUE(mask[0][0][0].all().item<bool>());
  EXPECT_TRUE(mask[0][0][1].all().item<bool>());
  // Query 3 sees the tokens 2..3 only: padding and the future masked.
  auto row = mask[0][0][3];
  EXPECT_TRUE(at::equal(row, torch::tensor(std::vector<int64_t>{0, 0, 1, 1, 0}).to(torch::kBool)));
  // Row 1 is right padded: the padded query 4 sees the real tokens 0..3, not itself.
  EXPECT_TRUE(at::equal(mask[1][0][4],
                        torch::tensor(std::vector<int64_t>{1, 1, 1, 1, 0}).to(torch::kBool)));
  EXPECT_TRUE(mask.any(-1).all().item<bool>()) << "a row with no key left";
}

// fp16's lowest finite value added to a negative fp16 score rounds to -inf, and a row of -inf has
// no softmax: the old additive mask made every left-padded position NaN in fp16. The bool mask
// never adds anything to the scores.
TEST(AttentionMask, LeftPaddedForwardIsFiniteInEveryDtype) {
  torch::NoGradGuard no_grad;
  for (auto dtype : {torch::kFloat16, torch::kBFloat16, torch::kFloat32}) {
    LlamaModel m(config(4, 2), dtype, 3);
    auto ids = torch::randint(3, 97, {2, 8}, torch::kInt64);
    auto attention_mask = torch::ones({2, 8}, torch::kInt64);
    attention_mask.index_put_({0, torch::indexing::Slice(0, 4)}, 0);
    auto positions = torch::clamp_min(attention_mask.cumsum(1) - 1, 0);
    auto logits = m->forward(ids, attention_mask, positions);
    EXPECT_TRUE(torch::isfinite(logits).all().item<bool>()) << c10::toString(dtype);
  }
  // And straight through the kernel with a row that attends nothing, every score in it well
  // below -16 (so fp16 lowest + score rounds to -inf): finite, not NaN.
  for (auto dtype : {torch::kFloat16, torch::kBFloat16, torch::kFloat32}) {
    auto row = torch::full({8}, 2.0);
    auto q = row.expand({1, 2, 4, 8}).to(dtype);
    auto k = (row * -4.0).expand({1, 2, 4, 8}).to(dtype);  // scores -4 * 32 / sqrt(8) = -45
    auto v = torch::randn({1, 2, 4, 8}).to(dtype);
    auto mask = torch::ones({4, 4}, torch::kBool).tril().view({1, 1, 4, 4}).clone();
    mask[0][0][0] = false;  // query 0 may attend nothing
    auto out = causal_attention(q, k, v, mask, std::nullopt);
    EXPECT_TRUE(torch::isfinite(out).all().item<bool>()) << c10::toString(dtype);
    // The other rows are unaffected: each attends its causal prefix.
    expect_close(out.slice(2, 1), eager_attention_reference(q, k, v, mask, std::nullopt).slice(2, 1),
                 dtype == torch::kFloat32 ? 2e-6 : 3e-2, std::string(c10::toString(dtype)) + " other rows");
  }
}

TEST(RopeTables, CachedPerLengthDeviceAndDtype) {
  LlamaModel m(config(4, 2));
  auto a = m->rope(12), b = m->rope(12), other = m->rope(7);
  EXPECT_EQ(a.cos.data_ptr(), b.cos.data_ptr()) << "the second call recomputed the tables";
  EXPECT_NE(a.cos.data_ptr(), other.cos.data_ptr());
  EXPECT_EQ(other.cos.size(2), 7);
  // Cached tables equal tables computed from explicit positions 0..T-1 (never cached).
  auto fresh = m->rope(12, torch::arange(12, torch::kInt64));
  EXPECT_NE(fresh.cos.data_ptr(), a.cos.data_ptr());
  EXPECT_TRUE(at::equal(fresh.cos, a.cos));
  EXPECT_TRUE(at::equal(fresh.sin, a.sin));
  EXPECT_TRUE(at::equal(fresh.signed_sin, a.signed_sin));
  EXPECT_FALSE(a.cos.requires_grad());
  // A new compute dtype gets its own tables.
  m->set_compute_dtype(torch::kBFloat16);
  auto half = m->rope(12);
  EXPECT_EQ(half.cos.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(at::equal(half.cos, a.cos.to(torch::kBFloat16)));
}

// HF's LlamaRMSNorm: x.float() -> x * rsqrt(mean(x^2) + eps) -> cast back -> weight *.
torch::Tensor hf_rms_norm(const torch::Tensor& x, const torch::Tensor& w, double eps) {
  auto xf = x.to(torch::kFloat32);
  xf = xf * torch::rsqrt(xf.pow(2).mean(-1, true) + eps);
  return w * xf.to(x.scalar_type());
}

TEST(RmsNormModule, LowPrecisionKeepsFp32StatisticsLikeHf) {
  for (auto dtype : {torch::kBFloat16, torch::kFloat16}) {
    torch::manual_seed(2);
    RmsNorm norm(64, 1e-5);
    norm->to(dtype);
    {
      torch::NoGradGuard no_grad;
      norm->weight.copy_((torch::rand({64}) + 0.5).to(dtype));
    }
    // Large values: fp16 squares overflow (300^2 > 65504) unless the statistics are fp32.
    auto x = (torch::randn({3, 5, 64}) * 300).to(dtype).requires_grad_(true);
    auto x2 = x.detach().clone().requires_grad_(true);
    auto w2 = norm->weight.detach().clone().requires_grad_(true);
    auto y = norm(x), y_ref = hf_rms_norm(x2, w2, 1e-5);
    EXPECT_EQ(y.scalar_type(), dtype);
    ASSERT_TRUE(torch::isfinite(y).all().item<bool>()) << c10::toString(dtype);
    // One rounding of the normalised value in both; rsqrt's own rounding may move it one ulp.
    expect_close(y, y_ref, 1.0 / 128, std::string(c10::toString(dtype)) + " forward");
    auto g = torch::randn({3, 5, 64}).to(dtype);
    y.backward(g);
    y_ref.backward(g);
    expect_close(x.grad(), x2.grad(), 3e-2, std::string(c10::toString(dtype)) + " grad x");
    expect_close(norm->weight.grad(), w2.grad(), 3e-2,
                 std::string(c10::toString(dtype)) + " grad weight");
  }
}

TEST(RmsNormModule, Fp32MatchesHfTightly) {
  torch::manual_seed(4);
  RmsNorm norm(48, 1e-6);
  auto x = torch::randn({2, 7, 48});
  torch::NoGradGuard no_grad;
  expect_close(norm(x), hf_rms_norm(x, norm->weight, 1e-6), 2e-6, "fp32 forward");
}

}  // namespace
}  // namespace fabkit::trainer
