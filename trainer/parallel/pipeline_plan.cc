#include "trainer/parallel/pipeline_plan.h"

#include <torch/torch.h>

#include "common/errors.h"
#include "trainer/model/lm_loss.h"

namespace fabkit::trainer {
namespace {

// The decoder layer of an HF name ("model.layers.7.mlp.up_proj.weight" -> 7), or -1.
int64_t layer_of(const std::string& name) {
  const std::string prefix = "model.layers.";
  if (name.rfind(prefix, 0) != 0) return -1;
  return std::stoll(name.substr(prefix.size(), name.find('.', prefix.size()) - prefix.size()));
}

}  // namespace

StageParamCounts count_stage_params(const LlamaModel& model) {
  StageParamCounts c;
  c.layers.assign(static_cast<size_t>(model->config().num_hidden_layers), 0);
  for (const auto& [name, t] : model->hf_named_parameters()) {
    const int64_t layer = layer_of(name);
    if (layer >= 0) {
      c.layers.at(static_cast<size_t>(layer)) += t.numel();
    } else if (name == "model.embed_tokens.weight") {
      c.embed += t.numel();
    } else {
      c.head += t.numel();
    }
  }
  return c;
}

LlamaPlan plan_llama_stage(LlamaModel model, std::shared_ptr<MicroBatch> batch, int first_layer,
                           int end_layer, bool first, bool last) {
  FABKIT_ENFORCE(!model->config().tie_word_embeddings || (first && last),
                 "tied embeddings cannot be split over pipeline stages");
  FABKIT_ENFORCE(first_layer < end_layer, "a pipeline stage needs a decoder layer");
  LlamaPlan plan;
  std::vector<size_t> layer_unit(static_cast<size_t>(end_layer), 0);
  if (first) plan.units.push_back({"embed", {}});
  for (int i = first_layer; i < end_layer; ++i) {
    layer_unit[i] = plan.units.size();
    plan.units.push_back({"layers." + std::to_string(i), {}});
  }
  const size_t head_unit = plan.units.size();
  if (last) plan.units.push_back({"norm+head", {}});
  for (auto& [name, t] : model->hf_named_parameters()) {
    const int64_t layer = layer_of(name);
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
                             const int64_t seq = batch->input_ids.size(1);
                             batch->rope = model->rope(seq);
                             batch->bias = model->attention_bias(seq, batch->attention_mask);
                             return model->embed(batch->input_ids);
                           }});
  }
  auto decoder = model->layers();
  for (int i = first_layer; i < end_layer; ++i) {
    DecoderLayer layer = decoder[i];
    const bool tables_here = !first && i == first_layer;
    plan.stages.push_back({"layers." + std::to_string(i), layer_unit[i],
                           [model, layer, batch, tables_here](const at::Tensor& h) mutable {
                             if (tables_here) {
                               const int64_t seq = batch->input_ids.size(1);
                               batch->rope = model->rope(seq);
                               batch->bias = model->attention_bias(seq, batch->attention_mask);
                             }
                             return layer->forward(h, batch->rope, batch->bias);
                           }});
  }
  if (last) {
    plan.stages.push_back({"head+loss", head_unit, [model, batch](const at::Tensor& h) mutable {
                             at::Tensor logits = model->lm_head(model->final_norm(h));
                             LmLoss loss = causal_lm_loss(logits, batch->labels);
                             return loss.sum / batch->loss_normalizer;
                           }});
  }
  return plan;
}

}  // namespace fabkit::trainer
