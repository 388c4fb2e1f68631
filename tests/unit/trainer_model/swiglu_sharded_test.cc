// The training path takes the no-copy GEMM: while a decoder layer's unit is gathered by
// ShardedModel, its gate_proj and up_proj weights lie back to back in the unit's flat buffer
// (HF's parameter order, which plan_llama keeps), so swiglu_mlp reads them through one [2I, H]
// view. Checked in fp32 and bf16 compute, with and without recompute; and the sharded gradients
// (view path) equal the plain model's (concatenated-copy path).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include <torch/torch.h>

#include "trainer/distributed/comm.h"
#include "trainer/model/lm_loss.h"
#include "trainer/model/swiglu_mlp.h"
#include "trainer/parallel/llama_plan.h"
#include "trainer/parallel/sharded_model.h"

namespace fabkit::trainer {
namespace {

LlamaConfig tiny() {
  Json j = {{"hidden_size", 32},        {"intermediate_size", 88},  {"num_hidden_layers", 2},
            {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"vocab_size", 97}};
  return parse_llama_config(j, "test");
}

void check_layers_read_adjacent_weights(torch::ScalarType compute, bool recompute) {
  const std::string what =
      std::string(c10::toString(compute)) + (recompute ? " recompute" : " keep graph");
  torch::manual_seed(9);
  const auto ids = torch::randint(3, 97, {2, 7}, torch::kLong);

  auto comm = make_local_comm();
  LlamaModel m(tiny(), torch::kFloat32, 4);
  if (compute != torch::kFloat32) m->set_compute_dtype(compute);
  auto mb = std::make_shared<MicroBatch>();
  LlamaPlan plan = plan_llama(m, mb);
  // Wrap each decoder layer's stage: record whether its MLP weights are adjacent when it runs.
  std::map<std::string, int> adjacent, runs;
  auto layers = m->layers();
  for (auto& stage : plan.stages) {
    if (stage.name.rfind("layers.", 0) != 0) continue;
    DecoderLayer layer = layers[std::stoul(stage.name.substr(7))];
    stage.forward = [&, layer, name = stage.name, inner = stage.forward](const at::Tensor& h) {
      ++runs[name];
      adjacent[name] +=
          adjacent_rows_view(layer->mlp->gate_proj->weight, layer->mlp->up_proj->weight).defined();
      return inner(h);
    };
  }
  ShardedModel sm(*comm, plan.units, plan.stages, recompute, compute);
  mb->input_ids = ids;
  mb->labels = ids;
  mb->attention_mask = torch::ones_like(ids);
  mb->loss_normalizer = static_cast<double>(causal_lm_loss(torch::zeros({2, 7, 97}), ids).tokens);
  sm.forward_backward();
  ASSERT_EQ(runs.size(), 2u) << what;
  for (const auto& [name, n] : runs) {
    EXPECT_EQ(n, recompute ? 2 : 1) << what << " " << name;  // recompute runs each stage twice
    EXPECT_EQ(adjacent[name], n) << what << " " << name << ": gate/up not adjacent when gathered";
  }
  if (compute != torch::kFloat32) return;

  // The plain model (separate allocations: the concatenated copy) gives the same gradients.
  LlamaModel ref(tiny(), torch::kFloat32, 4);
  EXPECT_FALSE(adjacent_rows_view(ref->layers()[0]->mlp->gate_proj->weight,
                                  ref->layers()[0]->mlp->up_proj->weight)
                   .defined());
  (causal_lm_loss(ref->forward(ids), ids).sum / mb->loss_normalizer).backward();
  std::map<std::string, torch::Tensor> ref_grads;
  for (auto& [n, p] : ref->hf_named_parameters()) ref_grads[n] = p.grad();
  for (const auto& s : sm.shards()) {
    for (const auto& slot : s.params) {
      auto g = torch::from_blob(const_cast<float*>(s.grad.data()) + slot.offset, slot.shape);
      const double scale = ref_grads.at(slot.name).abs().max().item<double>();
      EXPECT_LE((g - ref_grads.at(slot.name)).abs().max().item<double>(), 1e-6 * scale + 1e-12)
          << what << " " << slot.name;
    }
  }
}

TEST(SwiGluMlpSharded, Fp32LayersReadGateUpThroughOneView) {
  check_layers_read_adjacent_weights(torch::kFloat32, false);
}
TEST(SwiGluMlpSharded, Fp32RecomputeLayersReadGateUpThroughOneView) {
  check_layers_read_adjacent_weights(torch::kFloat32, true);
}
TEST(SwiGluMlpSharded, Bf16LayersReadGateUpThroughOneView) {
  check_layers_read_adjacent_weights(torch::kBFloat16, false);
}
TEST(SwiGluMlpSharded, Bf16RecomputeLayersReadGateUpThroughOneView) {
  check_layers_read_adjacent_weights(torch::kBFloat16, true);
}

}  // namespace
}  // namespace fabkit::trainer
