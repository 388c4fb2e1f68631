#include "trainer/parallel/llama_plan.h"

#include <torch/torch.h>

#include "trainer/model/lm_loss.h"

namespace fabkit::trainer {

LlamaPlan plan_llama(LlamaModel model, std::shared_ptr<MicroBatch> batch) {
  LlamaPlan plan;
  const int64_t layers = model->config().num_hidden_layers;
  const bool separate_head = !model->config().tie_word_embeddings;
  plan.units.resize(static_cast<size_t>(layers) + (separate_head ? 2 : 1));
  plan.units[0].unit = separate_head ? "embed" : "embed+norm+head";
  for (int64_t i = 0; i < layers; ++i) plan.units[i + 1].unit = "layers." + std::to_string(i);
  const size_t head_unit = separate_head ? static_cast<size_t>(layers) + 1 : 0;
  if (separate_head) plan.units[head_unit].unit = "norm+head";
  for (auto& [name, t] : model->hf_named_parameters()) {
    const std::string prefix = "model.layers.";
    if (name.rfind(prefix, 0) == 0) {
      const int64_t idx = std::stoll(name.substr(prefix.size(), name.find('.', prefix.size()) - prefix.size()));
      plan.units.at(idx + 1).params.emplace_back(name, t);
    } else if (name == "model.embed_tokens.weight") {
      plan.units[0].params.emplace_back(name, t);
    } else {
      plan.units[head_unit].params.emplace_back(name, t);
    }
  }

  plan.stages.push_back({"embed", 0, [model, batch](const at::Tensor&) mutable {
                           const int64_t seq = batch->input_ids.size(1);
                           batch->rope = model->rope(seq);
                           batch->bias = model->attention_bias(seq, batch->attention_mask);
                           return model->embed(batch->input_ids);
                         }});
  auto decoder = model->layers();
  for (int64_t i = 0; i < layers; ++i) {
    DecoderLayer layer = decoder[i];
    plan.stages.push_back({"layers." + std::to_string(i), static_cast<size_t>(i + 1),
                           [layer, batch](const at::Tensor& h) mutable {
                             return layer->forward(h, batch->rope, batch->bias);
                           }});
  }
  plan.stages.push_back({"head+loss", head_unit, [model, batch](const at::Tensor& h) mutable {
                           at::Tensor logits = model->lm_head(model->final_norm(h));
                           LmLoss loss = causal_lm_loss(logits, batch->labels);
                           return loss.sum / batch->loss_normalizer;
                         }});
  return plan;
}

}  // namespace fabkit::trainer
