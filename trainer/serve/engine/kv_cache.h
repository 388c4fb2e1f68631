// Incremental decoding for the project's LlamaModel: a key/value cache, a prefill of prompts and
// a decode step that runs one new token for each of a batch of sequences, each at its own
// position, without recomputing the past. Built from the model's public pieces (its layers,
// projections, norms, RoPE tables and attention mask), so training's forward is untouched; the
// numerics follow LlamaModelImpl::forward (same RoPE path per dtype, GQA through the fused
// attention kernel, tied embeddings, Mistral's sliding window). Decode-time logits equal a full
// forward over the whole sequence up to the rounding of the kernels' shapes (kv_cache_test checks
// it per step, fp32 and bf16).
//
// The cache is one pool per decoder: per layer, keys and values [max_sequences, kv_heads,
// capacity, head_dim], a sequence holding one slot (its row) while it lives. So a decode step's
// attention is one call over the rows of the batch (each row masked to its own length), not one
// call per sequence, and its new keys and values are written with one indexed copy per layer.
// The capacity grows by doubling to the longest sequence (up to the context length), so short
// requests do not hold a full context's memory.
#pragma once

#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

#include <ATen/core/Tensor.h>

#include "trainer/model/llama.h"

namespace fabkit::serve {

struct KvSlots;  // the decoder's pool (kv_cache.cc)

// One sequence's place in a decoder's cache: a slot taken by its first prefill and given back when
// it is destroyed (or prefilled again), and the number of positions filled. Not copyable: the slot
// is the sequence's own.
class SequenceKvCache {
 public:
  SequenceKvCache() = default;
  ~SequenceKvCache();
  SequenceKvCache(const SequenceKvCache&) = delete;
  SequenceKvCache& operator=(const SequenceKvCache&) = delete;

  int64_t length() const { return length_; }

 private:
  friend class KvDecoder;
  void release();
  std::shared_ptr<KvSlots> slots_;
  int64_t slot_ = -1;
  int64_t length_ = 0;
};

class KvDecoder {
 public:
  // context_length: the most positions a sequence may hold. max_sequences: how many sequences
  // may hold a slot at once (the engine's max_batch). The model must be on its device and in its
  // dtype already: the decoder moves each layer's q, k and v weights into one buffer, and gate
  // and up into another (same values; the model's parameters become views of the buffers), so a
  // step multiplies by each group in one GEMM.
  KvDecoder(trainer::LlamaModel model, int64_t context_length, int64_t max_sequences = 8);

  // Runs each prompt through the model into its cache (a fresh slot; a cache prefilled before
  // starts over), all prompts' tokens through the GEMMs at once and attention per prompt. Returns
  // the logits of each prompt's last position, fp32 [prompts, vocab] on the CPU. UsageError when a
  // prompt is empty, too long or holds an id outside the vocabulary, or when the slots run out.
  at::Tensor prefill(const std::vector<SequenceKvCache*>& caches,
                     const std::vector<std::vector<int64_t>>& prompts);
  // One prompt: its last position's logits, fp32 [vocab] on the CPU.
  at::Tensor prefill(SequenceKvCache& cache, const std::vector<int64_t>& prompt);

  // One token per sequence, appended at each cache's own position; returns fp32 [batch, vocab]
  // on the CPU. The GEMMs and attention run once over the batch.
  at::Tensor decode(const std::vector<SequenceKvCache*>& caches,
                    const std::vector<int64_t>& tokens);

  int64_t context_length() const { return context_length_; }
  int64_t vocab_size() const { return model_->config().vocab_size; }
  int64_t max_sequences() const { return max_sequences_; }
  // Positions the pool holds per slot now (grown on demand).
  int64_t capacity() const;

 private:
  // Grows every layer's pool to hold `length` positions per slot.
  void reserve(int64_t length);
  // q [B, heads, T, D] and k [B, kv_heads, T, D] rotated as LlamaAttentionImpl does.
  void apply_rope(at::Tensor& q, at::Tensor& k, const trainer::RopeCache& rope) const;
  // x [B, T, hidden] -> q [B, heads, T, D], k and v [B, kv_heads, T, D], from one GEMM.
  std::tuple<at::Tensor, at::Tensor, at::Tensor> project_qkv(size_t layer,
                                                             const at::Tensor& x) const;
  // Norm and head of the given positions of hidden [1 or B, T, H] -> fp32 [rows, vocab] on CPU.
  at::Tensor logits_of(const at::Tensor& hidden);

  trainer::LlamaModel model_;
  std::vector<trainer::DecoderLayer> layers_;
  // Per layer, the packed weights (pack_rows in kv_cache.cc): [q; k; v] and [gate; up].
  std::vector<at::Tensor> qkv_, gate_up_;
  int64_t context_length_, max_sequences_;
  int64_t heads_, kv_heads_, head_dim_;
  std::shared_ptr<KvSlots> slots_;
};

}  // namespace fabkit::serve
