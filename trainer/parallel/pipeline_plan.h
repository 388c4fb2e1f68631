// The parameter counts a pipeline's layer split balances (pipeline_split.h). A stage's units and
// stages come from plan_llama_stage (llama_plan.h), the builder the whole model's plan uses too.
//
// Tied embeddings are refused for more than one stage (the caller says so): the head would be
// the first stage's embedding matrix, and its gradient would have to be summed between the first
// and the last stage every step.
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/parallel/llama_plan.h"

namespace fabkit::trainer {

struct StageParamCounts {
  std::vector<int64_t> layers;  // per decoder layer
  int64_t embed = 0;            // the embedding (first stage)
  int64_t head = 0;             // final norm + lm_head (last stage)
};
StageParamCounts count_stage_params(const LlamaModel& model);

}  // namespace fabkit::trainer
