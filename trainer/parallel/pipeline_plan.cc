#include "trainer/parallel/pipeline_plan.h"

#include <torch/torch.h>

namespace fabkit::trainer {

StageParamCounts count_stage_params(const LlamaModel& model) {
  StageParamCounts c;
  c.layers.assign(static_cast<size_t>(model->config().num_hidden_layers), 0);
  for (const auto& [name, t] : model->hf_named_parameters()) {
    const int64_t layer = hf_layer_index(name);
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

}  // namespace fabkit::trainer
