// The split backward of zero-bubble pipeline schedules (trainer/model/weight_grad_store.h): a B
// pass with a store active gives the input gradient and leaves the GEMM weights' gradients in the
// store; its W pass (flush) then gives every weight the gradient one whole backward gives.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "trainer/model/llama.h"
#include "trainer/model/weight_grad_store.h"

namespace fabkit::trainer {
namespace {

LlamaConfig tiny() {
  Json j = {{"hidden_size", 32},           {"intermediate_size", 48},  {"num_hidden_layers", 2},
            {"num_attention_heads", 4},    {"num_key_value_heads", 2}, {"vocab_size", 97},
            {"tie_word_embeddings", false}};
  return parse_llama_config(j, "test");
}

struct SplitMode {
  SplitMode() { set_split_weight_grads(true); }
  ~SplitMode() { set_split_weight_grads(false); }
};

// A decoder layer, the final norm and the head from a given activation, as a later pipeline
// stage runs them; loss = sum of the logits times fixed weights (a non-trivial gradient).
at::Tensor stage_forward(LlamaModel& m, const at::Tensor& x, const at::Tensor& probe) {
  const RopeCache rope = m->rope(x.size(1));
  at::Tensor h = m->layers()[1]->forward(x, rope, at::Tensor());
  return (m->lm_head(m->final_norm(h)) * probe).sum();
}

TEST(WeightGradStore, InputPassThenWeightPassEqualsOneBackward) {
  SplitMode split;
  LlamaModel m(tiny(), torch::kFloat32, 3);
  torch::manual_seed(5);
  const at::Tensor x0 = torch::randn({2, 6, 32});
  const at::Tensor probe = torch::randn({2, 6, 97});
  auto params = m->hf_named_parameters();

  // One whole backward (no store active: every gradient at once).
  at::Tensor x = x0.clone().requires_grad_(true);
  stage_forward(m, x, probe).backward();
  const at::Tensor dx_whole = x.grad().clone();
  std::map<std::string, at::Tensor> whole;
  for (auto& [name, p] : params) {
    if (p.grad().defined()) whole[name] = p.grad().clone();
    p.mutable_grad() = at::Tensor();
  }
  ASSERT_GE(whole.size(), 10u);  // the layer's 9 weights, the norm and the head

  // B: the input gradient is complete, the GEMM weights have none yet, the norms have theirs.
  WeightGradStore store;
  at::Tensor y = x0.clone().requires_grad_(true);
  const at::Tensor loss = stage_forward(m, y, probe);
  {
    WeightGradStore::Scope deferring(store);
    loss.backward();
  }
  EXPECT_TRUE(torch::allclose(y.grad(), dx_whole, 1e-5, 1e-6));
  EXPECT_EQ(store.size(), 4u);  // qkv, o_proj, the MLP (gate, up, down together), lm_head
  for (auto& [name, p] : params) {
    const bool gemm = name.find("_proj") != std::string::npos || name == "lm_head.weight";
    if (!whole.count(name)) continue;
    EXPECT_EQ(p.grad().defined(), !gemm) << name << " after the input pass";
  }
  // W: every weight's gradient equals the whole backward's.
  store.flush();
  EXPECT_TRUE(store.empty());
  for (auto& [name, p] : params) {
    if (!whole.count(name)) continue;
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_TRUE(torch::allclose(p.grad(), whole[name], 1e-5, 1e-6)) << name;
  }
}

// Without a store the deferrable GEMMs compute both gradients at once, as ATen's linear does.
TEST(WeightGradStore, WithoutAStoreNothingIsDeferred) {
  torch::manual_seed(9);
  const at::Tensor x0 = torch::randn({5, 8}), w0 = torch::randn({3, 8}), g = torch::randn({5, 3});
  at::Tensor xa = x0.clone().requires_grad_(true), wa = w0.clone().requires_grad_(true);
  at::Tensor xb = x0.clone().requires_grad_(true), wb = w0.clone().requires_grad_(true);
  (at::linear(xa, wa) * g).sum().backward();
  (deferrable_linear(xb, wb) * g).sum().backward();
  EXPECT_TRUE(torch::allclose(xa.grad(), xb.grad()));
  EXPECT_TRUE(torch::allclose(wa.grad(), wb.grad()));
  EXPECT_EQ(WeightGradStore::active(), nullptr);
}

}  // namespace
}  // namespace fabkit::trainer
