// The wrapping policy for the Llama decoder: which parameters shard together and the stages
// that run them. Units 1..L = the decoder layers.
//  - untied head: unit 0 = the embedding, unit L+1 = final norm + lm_head. Apart, the head's
//    gradient is reduced while the layers run their backward, instead of with the embedding's
//    after the last stage, where nothing is left to overlap (measured at 2 ranks: ~10 ms of a
//    ~205 ms step spent waiting at the end of the backward).
//  - tied: unit 0 = embedding + final norm; the head IS the embedding matrix, so they are one unit.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

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
  // Which keys each query may attend (bool [B,1,T,T], true = attend), from the padding and the
  // sliding window; undefined when neither bites: plain causal attention (SDPA's is_causal).
  // Set with rope.
  at::Tensor attend_mask;
};

struct LlamaPlan {
  std::vector<UnitParams> units;
  std::vector<Stage> stages;
};

// The whole model (one stage of everything): plan_llama_stage(model, batch, 0, L, true, true).
LlamaPlan plan_llama(LlamaModel model, std::shared_ptr<MicroBatch> batch);

// The units and stages of decoder layers [first_layer, end_layer), with the embedding when
// `first` and the final norm + head + loss when `last` (one pipeline stage; the whole model when
// both). Each decoder layer is its own unit, so a stage's replicas shard and gather layer by
// layer. A stage that is not the first starts from a received activation: its first layer
// computes the micro-batch's RoPE tables and attention mask itself (the embed stage does it on
// the first). Tied embeddings need first and last (the head is the embedding matrix).
LlamaPlan plan_llama_stage(LlamaModel model, std::shared_ptr<MicroBatch> batch, int first_layer,
                           int end_layer, bool first, bool last);

// The decoder layer of an HF parameter name ("model.layers.7.mlp.up_proj.weight" -> 7), or -1.
int64_t hf_layer_index(const std::string& name);

}  // namespace fabkit::trainer
