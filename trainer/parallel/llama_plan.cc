#include "trainer/parallel/llama_plan.h"

#include <torch/torch.h>

#include "common/errors.h"
#include "trainer/model/lm_loss.h"

namespace fabkit::trainer {
namespace {

// The micro-batch's RoPE tables and attention mask, which every decoder layer reads: computed by
// the stage that starts the forward (the embed stage, or a later pipeline stage's first layer).
void set_tables(LlamaModel& model, MicroBatch& batch) {
  const int64_t seq = batch.input_ids.size(1);
  batch.rope = model->rope(seq);
  batch.attend_mask = model->attention_bias(seq, batch.attention_mask);
}

}  // namespace

int64_t hf_layer_index(const std::string& name) {
  const std::string prefix = "model.layers.";
  if (name.rfind(prefix, 0) != 0) return -1;
  return std::stoll(name.substr(prefix.size(), name.find('.', prefix.size()) - prefix.size()));
}

LlamaPlan plan_llama(LlamaModel model, std::shared_ptr<MicroBatch> batch) {
  const auto layers = static_cast<int>(model->config().num_hidden_layers);
  return plan_llama_stage(std::move(model), std::move(batch), 0, layers, true, true);
}

LlamaPlan plan_llama_stage(LlamaModel model, std::shared_ptr<MicroBatch> batch, int first_layer,
                           int end_layer, bool first, bool last) {
  const bool tied = model->config().tie_word_embeddings;
  FABKIT_ENFORCE(!tied || (first && last), "tied embeddings cannot be split over pipeline stages");
  FABKIT_ENFORCE(first_layer < end_layer, "a stage needs a decoder layer");
  LlamaPlan plan;
  // Tied: the head IS the embedding matrix, so the embedding, the final norm and the head are one
  // unit that the embed and the head+loss stage both name. The sharded model gathers the unit a
  // stage names before it runs: were the head's stage to name a unit without the matrix, the
  // matrix would be gathered only while the embed stage runs, and released before the head ran
  // whenever units are released after each stage's forward (--recompute, validation).
  if (first) plan.units.push_back({tied ? "embed+norm+head" : "embed", {}});
  std::vector<size_t> layer_unit(static_cast<size_t>(end_layer), 0);
  for (int i = first_layer; i < end_layer; ++i) {
    layer_unit[static_cast<size_t>(i)] = plan.units.size();
    plan.units.push_back({"layers." + std::to_string(i), {}});
  }
  const size_t head_unit = tied ? 0 : plan.units.size();
  if (last && !tied) plan.units.push_back({"norm+head", {}});
  for (auto& [name, t] : model->hf_named_parameters()) {
    const int64_t layer = hf_layer_index(name);
    if (layer >= 0) {
      if (layer >= first_layer && layer < end_layer)
        plan.units[layer_unit[layer]].params.emplace_back(name, t);
    } else if (name == "model.embed_tokens.weight") {
      if (first) plan.units[0].params.emplace_back(name, t);
    } else if (last) {
      plan.units[head_unit].params.emplace_back(name, t);
    }
  }

  if (first) {
    plan.stages.push_back({"embed", 0, [model, batch](const at::Tensor&) mutable {
                             set_tables(model, *batch);
                             return model->embed(batch->input_ids);
                           }});
  }
  auto decoder = model->layers();
  for (int i = first_layer; i < end_layer; ++i) {
    DecoderLayer layer = decoder[i];
    const bool tables_here = !first && i == first_layer;  // a later pipeline stage's first layer
    plan.stages.push_back({"layers." + std::to_string(i), layer_unit[static_cast<size_t>(i)],
                           [model, layer, batch, tables_here](const at::Tensor& h) mutable {
                             if (tables_here) set_tables(model, *batch);
                             return layer->forward(h, batch->rope, batch->attend_mask);
                           }});
  }
  if (last) {
    plan.stages.push_back({"head+loss", head_unit, [model, batch](const at::Tensor& h) mutable {
                             at::Tensor logits = model->lm_head(model->final_norm(h));
                             // No token count here: it would read a device scalar back
                             // every micro-batch (the loop knows the count from the host batch).
                             return causal_lm_loss_sum(logits, batch->labels) /
                                    batch->loss_normalizer;
                           }});
  }
  return plan;
}

}  // namespace fabkit::trainer
