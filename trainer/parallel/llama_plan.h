// The wrapping policy for the Llama decoder: which parameters shard together and the stages
// that run them. Unit 0 = embedding + final norm (+ untied head): with tied embeddings the head
// IS the embedding matrix, so they must be one unit. Units 1..L = the decoder layers.
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
