// A world of one rank writes its gradient shards itself (ShardedModel::zero_grad defers the
// zeroing; the first reduction of a step overwrites the shard and takes its squared norm on the
// way). Stale values must never survive into a step, and the norm handed to the clip must be the
// one of what the shards hold.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <string>
#include <utility>

#include "tests/unit/trainer_dist/gloo_rank_threads.h"
#include "trainer/distributed/comm.h"
#include "trainer/model/lm_loss.h"
#include "trainer/parallel/llama_plan.h"

namespace fabkit::trainer {
namespace {

double shards_sum_squares(const std::vector<FlatShard>& shards) {
  double sq = 0.0;
  for (const FlatShard& s : shards) {
    for (float g : s.grad) sq += static_cast<double>(g) * g;
  }
  return sq;
}

struct OneRank {
  std::unique_ptr<Comm> comm = make_local_comm();
  LlamaModel model{tiny_config(false), torch::kFloat32, 7};
  std::shared_ptr<MicroBatch> mb = std::make_shared<MicroBatch>();
  std::unique_ptr<ShardedModel> sm;
  OneRank() {
    LlamaPlan plan = plan_llama(model, mb);
    sm = std::make_unique<ShardedModel>(*comm, plan.units, plan.stages, /*recompute=*/false);
  }
};

// Two micro-batches of a step after a step whose gradients are still in the shards (here: 1000
// everywhere): the shards end with the 1-process gradient of the whole batch, and the squared
// norm the model took equals the one of the shards.
TEST(ShardedModelOneRank, TheFirstMicroBatchOverwritesStaleGradientsAndTheNormIsTheShards) {
  torch::manual_seed(11);
  const torch::Tensor ids = torch::randint(0, 50, {4, 9}, torch::kInt64);
  LlamaModel ref(tiny_config(false), torch::kFloat32, 7);
  LmLoss l = causal_lm_loss(ref->forward(ids), ids);
  l.mean().backward();
  std::map<std::string, torch::Tensor> ref_grads;
  for (auto& [n, p] : ref->hf_named_parameters()) ref_grads[n] = p.grad().clone();

  OneRank r;
  for (FlatShard& s : r.sm->shards()) std::fill(s.grad.begin(), s.grad.end(), 1000.0f);
  r.sm->zero_grad();
  for (int half = 0; half < 2; ++half) {
    r.mb->input_ids = ids.narrow(0, 2 * half, 2);
    r.mb->labels = r.mb->input_ids;
    r.mb->attention_mask = torch::ones_like(r.mb->input_ids);
    r.mb->loss_normalizer = static_cast<double>(l.tokens);
    r.sm->forward_backward();
  }
  const std::optional<double> taken = r.sm->local_grad_sq_norm();
  ASSERT_TRUE(taken.has_value());
  const std::vector<FlatShard>& shards = std::as_const(*r.sm).shards();
  const double want = shards_sum_squares(shards);
  EXPECT_NEAR(*taken, want, 1e-12 * want);
  for (const FlatShard& s : shards) {
    for (const ParamSlot& slot : s.params) {
      const torch::Tensor g =
          torch::from_blob(const_cast<float*>(s.grad.data()) + slot.offset, slot.shape);
      const torch::Tensor& w = ref_grads.at(slot.name);
      EXPECT_LE((g - w).abs().max().item<double>(), 1e-6 + 1e-4 * w.abs().max().item<double>())
          << slot.name;
    }
  }
}

// Any non-const access may change the gradients (a clip, an unscale): the norm taken before is
// not offered after it. A const read keeps it.
TEST(ShardedModelOneRank, ANonConstAccessToTheShardsForgetsTheNormAConstOneKeepsIt) {
  OneRank r;
  r.mb->input_ids = torch::randint(0, 50, {2, 9}, torch::kInt64);
  r.mb->labels = r.mb->input_ids;
  r.mb->attention_mask = torch::ones_like(r.mb->input_ids);
  r.mb->loss_normalizer = 16.0;
  r.sm->zero_grad();
  r.sm->forward_backward();
  ASSERT_TRUE(r.sm->local_grad_sq_norm().has_value());
  EXPECT_FALSE(std::as_const(*r.sm).shards().empty());
  ASSERT_TRUE(r.sm->local_grad_sq_norm().has_value());
  for (FlatShard& s : r.sm->shards()) {
    for (float& g : s.grad) g *= 0.5f;
  }
  EXPECT_FALSE(r.sm->local_grad_sq_norm().has_value());
}

// A step whose backward never reached the shards (zero_grad, then nothing) reads zeros, through
// the shards and through their tensors, never the previous step's values.
TEST(ShardedModelOneRank, GradientsZeroedButNeverWrittenReadAsZeros) {
  OneRank r;
  for (FlatShard& s : r.sm->shards()) std::fill(s.grad.begin(), s.grad.end(), 3.0f);
  r.sm->zero_grad();
  EXPECT_FALSE(r.sm->local_grad_sq_norm().has_value());
  for (const at::Tensor& g : r.sm->grad_tensors()) EXPECT_EQ(g.abs().max().item<float>(), 0.0f);
  for (FlatShard& s : r.sm->shards()) std::fill(s.grad.begin(), s.grad.end(), 3.0f);
  r.sm->zero_grad();
  EXPECT_EQ(shards_sum_squares(std::as_const(*r.sm).shards()), 0.0);
}

}  // namespace
}  // namespace fabkit::trainer
