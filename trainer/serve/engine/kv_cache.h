// Incremental decoding for the project's LlamaModel: a per-sequence key/value cache, a prefill of
// a prompt and a decode step that runs one new token for each of a batch of sequences, each at
// its own position, without recomputing the past. Built from the model's public pieces (its
// layers, projections, norms, RoPE tables and attention mask), so training's forward is
// untouched; the numerics follow LlamaModelImpl::forward (same RoPE path per dtype, GQA through
// the fused attention kernel, tied embeddings, Mistral's sliding window). Decode-time logits
// equal a full forward over the whole sequence up to the rounding of the kernels' shapes
// (kv_cache_test checks it per step, fp32 and bf16).
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "trainer/model/llama.h"

namespace fabkit::serve {

// The keys and values one sequence has produced so far, per layer [kv_heads, capacity, head_dim]
// with the first length() positions filled. Grows by doubling (up to the context length), so a
// short request does not hold a full context's memory.
class SequenceKvCache {
 public:
  int64_t length() const { return length_; }
  int64_t capacity() const { return capacity_; }

 private:
  friend class KvDecoder;
  std::vector<at::Tensor> keys_, values_;  // one per layer
  int64_t length_ = 0;
  int64_t capacity_ = 0;
};

class KvDecoder {
 public:
  // context_length: the most positions a sequence may hold (its cache never grows beyond).
  KvDecoder(trainer::LlamaModel model, int64_t context_length);

  // Runs the prompt through the model into a fresh cache; returns the logits of its last
  // position, fp32 [vocab] on the CPU. UsageError when the prompt is empty or too long.
  at::Tensor prefill(SequenceKvCache& cache, const std::vector<int64_t>& prompt);

  // One token per sequence, appended at each cache's own position; returns fp32 [batch, vocab]
  // on the CPU. The GEMMs run once over the batch; attention runs per sequence over its cache.
  at::Tensor decode(const std::vector<SequenceKvCache*>& caches,
                    const std::vector<int64_t>& tokens);

  int64_t context_length() const { return context_length_; }
  int64_t vocab_size() const { return model_->config().vocab_size; }

 private:
  void reserve(SequenceKvCache& cache, int64_t length) const;
  // q [B, heads, T, D] and k [B, kv_heads, T, D] rotated as LlamaAttentionImpl does.
  void apply_rope(at::Tensor& q, at::Tensor& k, const trainer::RopeCache& rope) const;
  at::Tensor logits_of_last(const at::Tensor& hidden);  // [B, T, H] -> fp32 [B, vocab] on CPU

  trainer::LlamaModel model_;
  std::vector<trainer::DecoderLayer> layers_;
  int64_t context_length_;
  int64_t heads_, kv_heads_, head_dim_;
};

}  // namespace fabkit::serve
