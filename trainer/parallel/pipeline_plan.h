// The wrapping policy for one pipeline stage of the Llama decoder: the units and stages (in
// sharded_model.h's sense) of the decoder layers [first_layer, end_layer), with the embedding on
// the first pipeline stage and the final norm + head + loss on the last. Each decoder layer is
// its own unit as in plan_llama, so a stage's replicas shard and gather layer by layer.
//
// Tied embeddings are refused for more than one stage (the caller says so): the head would be
// the first stage's embedding matrix, and its gradient would have to be summed between the first
// and the last stage every step.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "trainer/parallel/llama_plan.h"

namespace fabkit::trainer {

struct StageParamCounts {
  std::vector<int64_t> layers;  // per decoder layer
  int64_t embed = 0;            // the embedding (first stage)
  int64_t head = 0;             // final norm + lm_head (last stage)
};
StageParamCounts count_stage_params(const LlamaModel& model);

// A stage that is not the first starts from a received activation: its first layer computes the
// micro-batch's RoPE tables and attention bias itself (the embed stage does it on the first).
LlamaPlan plan_llama_stage(LlamaModel model, std::shared_ptr<MicroBatch> batch, int first_layer,
                           int end_layer, bool first, bool last);

}  // namespace fabkit::trainer
