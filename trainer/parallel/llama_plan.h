// The wrapping policy for the Llama decoder: which parameters shard together and the stages
// that run them. Units 1..L = the decoder layers.
//  - untied head: unit 0 = the embedding, unit L+1 = final norm + lm_head. Apart, the head's
//    gradient is reduced while the layers run their backward, instead of with the embedding's
//    after the last stage, where nothing is left to overlap (measured at 2 ranks: ~10 ms of a
//    ~205 ms step spent waiting at the end of the backward).
//  - tied: unit 0 = embedding + final norm; the head IS the embedding matrix, so they are one unit.
#pragma once

#include <memory>

#include "trainer/model/llama.h"
#include "trainer/parallel/sharded_model.h"

namespace fabkit::trainer {

// What the stages read for the current micro-batch; the training loop fills it before each
// forward_backward / forward_loss.
struct MicroBatch {
  at::Tensor input_ids;       // [B,T] int64
  at::Tensor labels;          // [B,T] int64, -100 = ignored
  at::Tensor attention_mask;  // [B,T] int64
  double loss_normalizer = 1.0;  // target tokens in the whole global batch (all ranks, all micro-batches)
  RopeCache rope;             // set by the embed stage
  at::Tensor bias;
};

struct LlamaPlan {
  std::vector<UnitParams> units;
  std::vector<Stage> stages;
};

LlamaPlan plan_llama(LlamaModel model, std::shared_ptr<MicroBatch> batch);

}  // namespace fabkit::trainer
