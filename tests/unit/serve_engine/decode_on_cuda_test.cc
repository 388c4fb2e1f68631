// fabtrain serve on one GPU (`--device cuda`): the KV-cached decoder and the decode engine with the
// model on the device. Each decode step's logits equal the full forward's on the same device
// (fp32 and bf16), the device's prefill equals the CPU's, and the engine's thread (which is not
// the thread that moved the model) serves a batch there with each request's greedy tokens as the
// decoder gives them alone. Skips, saying so, without a visible CUDA device (gpu-check runs it on
// a GPU, where that skip counts as a failure).
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "tests/unit/serve_engine/token_collector.h"
#include "trainer/serve/engine/decode_engine.h"
#include "trainer/serve/engine/kv_cache.h"
#include "trainer/serve/engine/sampler.h"

namespace fabkit::serve {
namespace {

trainer::LlamaConfig gqa_config() {
  trainer::LlamaConfig c;
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;
  c.vocab_size = 96;
  c.max_position_embeddings = 64;
  c.rms_norm_eps = 1e-5;
  c.initializer_range = 0.15;
  c.tie_word_embeddings = false;
  return c;
}

trainer::LlamaModel on_cuda(trainer::LlamaModel model) {
  const c10::Device cuda(c10::kCUDA, 0);
  model->to(cuda);
  model->set_device(cuda);
  return model;
}

double relative_diff(const at::Tensor& got, const at::Tensor& want) {
  return (got - want).abs().max().item<double>() / std::max(1.0, want.abs().max().item<double>());
}

#define SKIP_WITHOUT_CUDA()                                                       \
  if (!torch::cuda::is_available())                                               \
  GTEST_SKIP() << "no CUDA device is visible (this LibTorch: "                    \
               << (torch::cuda::device_count() ? "devices but unusable" : "none") \
               << "); fabtrain serve --device cuda needs one"

TEST(DecodeOnCuda, EveryStepEqualsTheFullForwardOnTheDevice) {
  SKIP_WITHOUT_CUDA();
  torch::NoGradGuard no_grad;
  for (auto [dtype, tolerance] : {std::pair{at::kFloat, 1e-4}, std::pair{at::kBFloat16, 3e-2}}) {
    auto model = on_cuda(trainer::LlamaModel(gqa_config(), dtype, /*seed=*/11));
    KvDecoder decoder(model, 64);
    std::vector<int64_t> ids = {1, 17, 42, 5, 88, 23, 9};
    SequenceKvCache cache;
    auto logits = decoder.prefill(cache, ids);
    ASSERT_TRUE(logits.is_cpu());  // the sampler reads it on the host
    for (int step = 0; step < 20; ++step) {
      auto input = at::tensor(ids, at::kLong).view({1, -1}).to(model->device());
      auto full = model->forward(input)[0][-1].to(at::kFloat).cpu();
      EXPECT_LE(relative_diff(logits, full), tolerance) << at::toString(dtype) << " step " << step;
      ids.push_back(argmax_token(logits.data_ptr<float>(), decoder.vocab_size()));
      logits = decoder.decode({&cache}, {ids.back()})[0];
    }
  }
}

TEST(DecodeOnCuda, ThePrefillEqualsTheCpus) {
  SKIP_WITHOUT_CUDA();
  torch::NoGradGuard no_grad;
  trainer::LlamaModel cpu(gqa_config(), at::kFloat, /*seed=*/5);
  auto gpu = on_cuda(trainer::LlamaModel(gqa_config(), at::kFloat, /*seed=*/5));
  KvDecoder on_host(cpu, 64), on_device(gpu, 64);
  SequenceKvCache a, b;
  const std::vector<int64_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5};
  EXPECT_LE(relative_diff(on_device.prefill(b, prompt), on_host.prefill(a, prompt)), 1e-4);
}

TEST(DecodeOnCuda, TheEngineServesABatchOnTheDevice) {
  SKIP_WITHOUT_CUDA();
  auto model = on_cuda(trainer::LlamaModel(gqa_config(), at::kFloat, /*seed=*/3));
  const std::vector<std::vector<int64_t>> prompts = {{1, 2, 3}, {7, 8, 9, 10, 11, 12}, {40}};
  // Each prompt's greedy tokens from the decoder alone, on this thread.
  std::vector<std::vector<int64_t>> alone;
  {
    torch::NoGradGuard no_grad;
    KvDecoder decoder(model, 64);
    for (const auto& p : prompts) {
      SequenceKvCache cache;
      auto logits = decoder.prefill(cache, p);
      std::vector<int64_t> got;
      for (int i = 0; i < 12; ++i) {
        got.push_back(argmax_token(logits.data_ptr<float>(), decoder.vocab_size()));
        if (i + 1 < 12) logits = decoder.decode({&cache}, {got.back()})[0];
      }
      alone.push_back(got);
    }
  }
  DecodeEngineOptions o;
  o.max_batch = 4;
  DecodeEngine engine(model, o);
  std::vector<std::shared_ptr<testing::Collected>> got;
  for (const auto& p : prompts) {
    GenerationRequest r;
    r.prompt = p;
    r.max_tokens = 12;
    r.sampling.temperature = 0;
    got.push_back(std::make_shared<testing::Collected>());
    ASSERT_TRUE(engine.submit(std::move(r), testing::collect(got.back())));
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(got[i]->wait_done()) << "request " << i;
    EXPECT_EQ(got[i]->last.error, "") << "request " << i;
    EXPECT_EQ(got[i]->snapshot(), alone[i]) << "request " << i;
  }
}

}  // namespace
}  // namespace fabkit::serve
