// The KV-cached decoder against the model's own full forward: after a prefill and after every
// decode step, the logits of the newest position equal those of LlamaModelImpl::forward over the
// whole sequence so far (fp32 to rounding, bf16 to bf16's), for plain multi-head attention with
// tied embeddings, grouped-query attention, Mistral's sliding window shorter than the sequence,
// and a batch of sequences at different positions.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "common/errors.h"
#include "trainer/serve/engine/kv_cache.h"
#include "trainer/serve/engine/sampler.h"

namespace fabkit::serve {
namespace {

using trainer::LlamaConfig;
using trainer::LlamaModel;

LlamaConfig tiny_config(int64_t kv_heads, bool tied, std::optional<int64_t> window = std::nullopt) {
  LlamaConfig c;
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = kv_heads;
  c.head_dim = 8;
  c.vocab_size = 96;
  c.max_position_embeddings = 64;
  c.rms_norm_eps = 1e-5;
  c.initializer_range = 0.15;
  c.tie_word_embeddings = tied;
  if (window) {
    c.architecture = "MistralForCausalLM";
    c.sliding_window = window;
  }
  return c;
}

// The last position's logits of a full forward over ids, fp32 [vocab].
at::Tensor full_forward_last(LlamaModel& model, const std::vector<int64_t>& ids) {
  auto input = at::tensor(ids, at::kLong).view({1, static_cast<int64_t>(ids.size())});
  return model->forward(input)[0][-1].to(at::kFloat);
}

// The largest difference relative to the logits' scale.
double relative_diff(const at::Tensor& got, const at::Tensor& want) {
  return (got - want).abs().max().item<double>() / std::max(1.0, want.abs().max().item<double>());
}

struct Case {
  std::string name;
  LlamaConfig config;
  at::ScalarType dtype;
  double tolerance;
};

class KvCacheMatchesFullForward : public ::testing::TestWithParam<Case> {};

TEST_P(KvCacheMatchesFullForward, EveryStepOfAGreedyDecode) {
  torch::NoGradGuard no_grad;
  const Case& c = GetParam();
  LlamaModel model(c.config, c.dtype, /*seed=*/11);
  KvDecoder decoder(model, c.config.max_position_embeddings);
  std::vector<int64_t> ids = {1, 17, 42, 5, 88, 23, 9};
  SequenceKvCache cache;
  auto logits = decoder.prefill(cache, ids);
  ASSERT_EQ(cache.length(), static_cast<int64_t>(ids.size()));
  EXPECT_LE(relative_diff(logits, full_forward_last(model, ids)), c.tolerance) << "prefill";
  // 20 steps: past a window of 6 and through a regrowth of the cache.
  for (int step = 0; step < 20; ++step) {
    ids.push_back(argmax_token(logits.data_ptr<float>(), decoder.vocab_size()));
    logits = decoder.decode({&cache}, {ids.back()})[0];
    ASSERT_EQ(cache.length(), static_cast<int64_t>(ids.size()));
    EXPECT_LE(relative_diff(logits, full_forward_last(model, ids)), c.tolerance) << "step " << step;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, KvCacheMatchesFullForward,
    ::testing::Values(Case{"mha_tied_fp32", tiny_config(4, true), at::kFloat, 1e-5},
                      Case{"gqa_fp32", tiny_config(2, false), at::kFloat, 1e-5},
                      Case{"mistral_window_fp32", tiny_config(2, true, 6), at::kFloat, 1e-5},
                      // bf16 rounds each op to 8 bits; the shapes differ (one row against the
                      // whole sequence), so kernels may round differently.
                      Case{"gqa_bf16", tiny_config(2, false), at::kBFloat16, 3e-2},
                      Case{"mistral_window_bf16", tiny_config(2, true, 6), at::kBFloat16, 3e-2}),
    [](const auto& info) { return info.param.name; });

// A wrong position or window changes logits by far more than rounding: the comparison above can
// fail. Here a decode from a cache of another sequence must not match.
TEST(KvCache, DetectsAWrongHistory) {
  torch::NoGradGuard no_grad;
  LlamaModel model(tiny_config(2, false), at::kFloat, 11);
  KvDecoder decoder(model, 64);
  SequenceKvCache cache;
  decoder.prefill(cache, {1, 17, 42, 5});
  auto logits = decoder.decode({&cache}, {7})[0];
  EXPECT_GT(relative_diff(logits, full_forward_last(model, {1, 18, 42, 5, 7})), 1e-3);
}

TEST(KvCache, BatchedDecodeAtDifferentPositionsEqualsEachAlone) {
  torch::NoGradGuard no_grad;
  LlamaModel model(tiny_config(2, true, 6), at::kFloat, 5);
  KvDecoder decoder(model, 64);
  const std::vector<std::vector<int64_t>> prompts = {
      {1, 2, 3}, {1, 50, 60, 70, 80, 90, 11, 12}, {4}};
  std::vector<SequenceKvCache> caches(prompts.size());
  std::vector<std::vector<int64_t>> ids = prompts;
  std::vector<int64_t> next;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto logits = decoder.prefill(caches[i], prompts[i]);
    next.push_back(argmax_token(logits.data_ptr<float>(), decoder.vocab_size()));
  }
  for (int step = 0; step < 8; ++step) {
    std::vector<SequenceKvCache*> batch;
    for (auto& c : caches) batch.push_back(&c);
    auto logits = decoder.decode(batch, next);
    for (size_t i = 0; i < prompts.size(); ++i) {
      ids[i].push_back(next[i]);
      EXPECT_LE(relative_diff(logits[i], full_forward_last(model, ids[i])), 1e-5)
          << "sequence " << i << " step " << step;
      next[i] = argmax_token(logits[i].contiguous().data_ptr<float>(), decoder.vocab_size());
    }
  }
}

// Prompts prefilled together (their tokens through the GEMMs at once, attention per prompt) give
// each prompt's logits alone, and decode on from there as each alone; with Mistral's window
// shorter than the longest prompt.
TEST(KvCache, PromptsPrefilledTogetherEqualEachAlone) {
  torch::NoGradGuard no_grad;
  LlamaModel model(tiny_config(2, false, 6), at::kFloat, 7);
  KvDecoder together(model, 64, 4), alone(model, 64, 4);
  const std::vector<std::vector<int64_t>> prompts = {
      {1, 2, 3}, {1, 50, 60, 70, 80, 90, 11, 12, 13}, {4}};
  std::vector<SequenceKvCache> caches(prompts.size());
  auto logits = together.prefill({&caches[0], &caches[1], &caches[2]}, prompts);
  ASSERT_EQ(logits.size(0), 3);
  std::vector<int64_t> next;
  for (size_t i = 0; i < prompts.size(); ++i) {
    SequenceKvCache own;
    EXPECT_LE(relative_diff(logits[i], alone.prefill(own, prompts[i])), 1e-5) << "prompt " << i;
    EXPECT_LE(relative_diff(logits[i], full_forward_last(model, prompts[i])), 1e-5) << i;
    EXPECT_EQ(caches[i].length(), static_cast<int64_t>(prompts[i].size()));
    next.push_back(argmax_token(logits[i].contiguous().data_ptr<float>(), together.vocab_size()));
  }
  auto step = together.decode({&caches[0], &caches[1], &caches[2]}, next);
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto ids = prompts[i];
    ids.push_back(next[i]);
    EXPECT_LE(relative_diff(step[i], full_forward_last(model, ids)), 1e-5) << "sequence " << i;
  }
}

// A decoder holds max_sequences slots: one more is refused by name, a destroyed cache gives its
// slot back, and a batch of caches whose slots are not the pool's first rows, in another order,
// still gets each sequence's own logits.
TEST(KvCache, SlotsRunOutComeBackAndNeedNotBeInOrder) {
  torch::NoGradGuard no_grad;
  LlamaModel model(tiny_config(2, true), at::kFloat, 9);
  KvDecoder decoder(model, 64, 3);
  auto a = std::make_unique<SequenceKvCache>();
  SequenceKvCache b, c, d;
  decoder.prefill(*a, {1, 2});
  decoder.prefill(b, {3, 4, 5});
  decoder.prefill(c, {6});
  try {
    decoder.prefill(d, {7});
    ADD_FAILURE() << "a fourth sequence got a slot of three";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("all 3 sequence slots"), std::string::npos) << e.what();
  }
  a.reset();  // slot 0 free again
  decoder.prefill(d, {7, 8, 9, 10});
  // Slots 2 (c), 1 (b) and 0 (d), in that order, at three different positions.
  auto logits = decoder.decode({&c, &b, &d}, {11, 12, 13});
  EXPECT_LE(relative_diff(logits[0], full_forward_last(model, {6, 11})), 1e-5);
  EXPECT_LE(relative_diff(logits[1], full_forward_last(model, {3, 4, 5, 12})), 1e-5);
  EXPECT_LE(relative_diff(logits[2], full_forward_last(model, {7, 8, 9, 10, 13})), 1e-5);
  // Only b and d now: rows 1 and 0 of the pool, in that order.
  logits = decoder.decode({&b, &d}, {15, 14});
  EXPECT_LE(relative_diff(logits[0], full_forward_last(model, {3, 4, 5, 12, 15})), 1e-5);
  EXPECT_LE(relative_diff(logits[1], full_forward_last(model, {7, 8, 9, 10, 13, 14})), 1e-5);
}

TEST(KvCache, RefusesWhatDoesNotFit) {
  torch::NoGradGuard no_grad;
  LlamaModel model(tiny_config(4, true), at::kFloat, 1);
  KvDecoder decoder(model, 4);
  SequenceKvCache cache;
  EXPECT_THROW(decoder.prefill(cache, {}), UsageError);
  EXPECT_THROW(decoder.prefill(cache, {1, 2, 3, 4, 5}), UsageError);
  try {
    decoder.prefill(cache, {1, 96});
    ADD_FAILURE() << "token 96 of a 96-token vocabulary was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("vocabulary"), std::string::npos) << e.what();
  }
  decoder.prefill(cache, {1, 2, 3});
  decoder.decode({&cache}, {4});
  EXPECT_EQ(cache.length(), 4);
  EXPECT_LE(decoder.capacity(), 4);                         // never grown past the context length
  EXPECT_THROW(decoder.decode({&cache}, {5}), UsageError);  // full
}

}  // namespace
}  // namespace fabkit::serve
