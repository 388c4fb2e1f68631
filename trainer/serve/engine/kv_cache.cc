#include "trainer/serve/engine/kv_cache.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include <ATen/ATen.h>
#include <ATen/TensorIndexing.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "common/errors.h"
#include "trainer/model/attention.h"
#include "trainer/model/rope_fp32.h"

namespace fabkit::serve {
namespace {

// The pool starts with room for this many positions past the longest prompt, so the first decode
// steps do not reallocate.
constexpr int64_t kMinCapacity = 16;

at::Tensor rotate_half(const at::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.slice(-1, half), x.slice(-1, 0, half)}, -1);
}

// Moves `weights` (matrices of one width) into one new buffer, back to back, each tensor then a
// view of its rows: the values are unchanged, every holder of the tensors (the model, its
// forward) sees the same ones, and the buffer multiplies x by all of them in one GEMM. A decode
// step is a few rows: one GEMM instead of three (q, k, v) or two (gate, up) saves the calls'
// fixed cost and reads the weights in one pass.
at::Tensor pack_rows(const std::vector<at::Tensor>& weights) {
  at::Tensor buffer = at::cat(weights, 0);
  int64_t row = 0;
  for (at::Tensor w : weights) {  // a handle on the same tensor: set_data re-points it
    const int64_t rows = w.size(0);
    w.set_data(buffer.narrow(0, row, rows));
    row += rows;
  }
  return buffer;
}

// HF's act_fn(gate_proj(x)) * up_proj(x), then down_proj, with gate and up as one GEMM over
// their packed rows (the training MLP's ops, swiglu_mlp.h, so every dtype rounds alike).
at::Tensor mlp(const trainer::DecoderLayer& layer, const at::Tensor& gate_up_w,
               const at::Tensor& x) {
  const int64_t inter = gate_up_w.size(0) / 2;
  auto gate_up = at::linear(x, gate_up_w);
  auto h = at::silu(gate_up.narrow(-1, 0, inter)).mul_(gate_up.narrow(-1, inter, inter));
  return at::linear(h, layer->mlp->down_proj->weight);
}

}  // namespace

struct KvSlots {
  std::mutex mutex;  // guards used: a cache may be destroyed on another thread than the decoder's
  std::vector<char> used;
  std::vector<at::Tensor> keys, values;  // per layer [slots, kv_heads, capacity, head_dim]
  int64_t capacity = 0;

  int64_t acquire() {
    std::lock_guard<std::mutex> lock(mutex);
    // The lowest free slot: a batch's rows then stay near the pool's first rows, which is what a
    // decode step's attention runs over.
    for (size_t s = 0; s < used.size(); ++s) {
      if (!used[s]) {
        used[s] = 1;
        return static_cast<int64_t>(s);
      }
    }
    return -1;
  }
  void release(int64_t slot) {
    std::lock_guard<std::mutex> lock(mutex);
    used[slot] = 0;
  }
};

SequenceKvCache::~SequenceKvCache() { release(); }

void SequenceKvCache::release() {
  if (slots_ && slot_ >= 0) slots_->release(slot_);
  slots_.reset();
  slot_ = -1;
  length_ = 0;
}

KvDecoder::KvDecoder(trainer::LlamaModel model, int64_t context_length, int64_t max_sequences)
    : model_(std::move(model)),
      context_length_(context_length),
      max_sequences_(max_sequences),
      slots_(std::make_shared<KvSlots>()) {
  const auto& c = model_->config();
  if (context_length_ < 1)
    throw UsageError("context length is " + std::to_string(context_length_) +
                     "; it must be at least 1 (default: the model's max_position_embeddings)");
  if (max_sequences_ < 1)
    throw UsageError("max_sequences is " + std::to_string(max_sequences_) +
                     "; it must be at least 1");
  layers_ = model_->layers();
  heads_ = c.num_attention_heads;
  kv_heads_ = c.num_key_value_heads;
  head_dim_ = c.head_dim;
  torch::NoGradGuard no_grad;
  for (auto& layer : layers_) {
    auto& a = layer->self_attn;
    qkv_.push_back(pack_rows({a->q_proj->weight, a->k_proj->weight, a->v_proj->weight}));
    gate_up_.push_back(pack_rows({layer->mlp->gate_proj->weight, layer->mlp->up_proj->weight}));
  }
  slots_->used.assign(static_cast<size_t>(max_sequences_), 0);
  slots_->keys.resize(layers_.size());
  slots_->values.resize(layers_.size());
}

int64_t KvDecoder::capacity() const { return slots_->capacity; }

void KvDecoder::reserve(int64_t length) {
  KvSlots& pool = *slots_;
  if (length <= pool.capacity) return;
  const int64_t capacity =
      std::min(context_length_, std::max({length, 2 * pool.capacity, length + kMinCapacity}));
  // Zeros, not empty: attention multiplies the masked positions' values by a weight of 0, which
  // an uninitialised NaN would turn into NaN.
  const auto options = at::TensorOptions(model_->dtype()).device(model_->device());
  for (size_t l = 0; l < layers_.size(); ++l) {
    for (auto* layer_pool : {&pool.keys[l], &pool.values[l]}) {
      auto grown = at::zeros({max_sequences_, kv_heads_, capacity, head_dim_}, options);
      if (pool.capacity > 0) grown.slice(2, 0, pool.capacity).copy_(*layer_pool);
      *layer_pool = grown;
    }
  }
  pool.capacity = capacity;
}

void KvDecoder::apply_rope(at::Tensor& q, at::Tensor& k, const trainer::RopeCache& rope) const {
  // The same three paths as LlamaAttentionImpl::forward: fp32 folds rotate_half's sign into
  // signed_sin (the hand-written kernel on the CPU), bf16/fp16 keep HF's op order, which rounds
  // after each op.
  if (q.scalar_type() == at::kFloat) {
    if (q.is_cpu()) {
      q = trainer::rope_fp32(q, rope.cos, rope.signed_sin);
      k = trainer::rope_fp32(k, rope.cos, rope.signed_sin);
      return;
    }
    q = at::addcmul(q * rope.cos, at::roll(q, head_dim_ / 2, -1), rope.signed_sin);
    k = at::addcmul(k * rope.cos, at::roll(k, head_dim_ / 2, -1), rope.signed_sin);
    return;
  }
  q = q * rope.cos + rotate_half(q) * rope.sin;
  k = k * rope.cos + rotate_half(k) * rope.sin;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> KvDecoder::project_qkv(size_t layer,
                                                                      const at::Tensor& x) const {
  const int64_t rows = x.size(0), t = x.size(1);
  auto qkv = at::linear(x, qkv_[layer]);  // [B, T, (heads + 2 kv_heads) * D]
  auto part = [&](int64_t first_head, int64_t heads) {
    return qkv.narrow(-1, first_head * head_dim_, heads * head_dim_)
        .view({rows, t, heads, head_dim_})
        .transpose(1, 2);
  };
  return {part(0, heads_), part(heads_, kv_heads_), part(heads_ + kv_heads_, kv_heads_)};
}

at::Tensor KvDecoder::logits_of(const at::Tensor& rows) {
  // Norm and head are per position: running them on the positions whose next token is wanted
  // gives the same rows as on the whole sequence, without a [T, vocab] GEMM for a prompt.
  return model_->lm_head(model_->final_norm(rows)).to(at::kFloat).cpu().contiguous();
}

at::Tensor KvDecoder::prefill(SequenceKvCache& cache, const std::vector<int64_t>& prompt) {
  return prefill(std::vector<SequenceKvCache*>{&cache}, {prompt})[0];
}

at::Tensor KvDecoder::prefill(const std::vector<SequenceKvCache*>& caches,
                              const std::vector<std::vector<int64_t>>& prompts) {
  torch::NoGradGuard no_grad;
  const auto n = static_cast<int64_t>(prompts.size());
  FABKIT_ENFORCE(n > 0 && caches.size() == prompts.size(), "prefill: one cache per prompt");
  for (const auto& prompt : prompts) {
    const auto t = static_cast<int64_t>(prompt.size());
    if (t == 0)
      throw UsageError("the prompt is empty; a request needs at least one token (e.g. BOS)");
    if (t > context_length_)
      throw UsageError("the prompt has " + std::to_string(t) +
                       " tokens, more than the context length " + std::to_string(context_length_) +
                       "; shorten it");
    for (size_t i = 0; i < prompt.size(); ++i)
      if (prompt[i] < 0 || prompt[i] >= vocab_size())
        throw UsageError("prompt token " + std::to_string(i) + " is " + std::to_string(prompt[i]) +
                         ", outside the model's vocabulary [0, " + std::to_string(vocab_size()) +
                         ")");
  }
  for (size_t i = 0; i < caches.size(); ++i)
    FABKIT_ENFORCE(std::find(caches.begin() + i + 1, caches.end(), caches[i]) == caches.end(),
                   "prefill: a cache appears twice");
  // A slot per prompt; on running out, those taken here are given back.
  for (auto* cache : caches) cache->release();
  for (auto* cache : caches) {
    const int64_t slot = slots_->acquire();
    if (slot < 0) {
      for (auto* taken : caches) taken->release();
      throw UsageError("all " + std::to_string(max_sequences_) +
                       " sequence slots of the KV cache are in use; finish a sequence first");
    }
    cache->slots_ = slots_;
    cache->slot_ = slot;
  }
  // Every prompt's tokens one after the other, each at its own positions from 0: the projections
  // and the MLP run once over all of them; attention runs per prompt over its own span.
  std::vector<int64_t> ids, positions, offsets, last;
  int64_t longest = 0;
  for (const auto& prompt : prompts) {
    offsets.push_back(static_cast<int64_t>(ids.size()));
    ids.insert(ids.end(), prompt.begin(), prompt.end());
    for (size_t i = 0; i < prompt.size(); ++i) positions.push_back(static_cast<int64_t>(i));
    last.push_back(static_cast<int64_t>(ids.size()) - 1);
    longest = std::max<int64_t>(longest, static_cast<int64_t>(prompt.size()));
  }
  const auto total = static_cast<int64_t>(ids.size());
  reserve(longest);
  const auto device = model_->device();
  auto h = model_->embed(at::tensor(ids, at::kLong).view({1, total}).to(device));
  auto rope = n == 1 ? model_->rope(total)
                     : model_->rope(total, at::tensor(positions, at::kLong).view({1, total}));
  // Causal, and Mistral's window when it is shorter than the prompt: the training forward's mask.
  std::vector<at::Tensor> masks;
  for (const auto& prompt : prompts)
    masks.push_back(model_->attention_bias(static_cast<int64_t>(prompt.size())));
  std::vector<at::Tensor> outs(n);
  for (size_t l = 0; l < layers_.size(); ++l) {
    auto& layer = layers_[l];
    auto& attn = layer->self_attn;
    auto x = layer->input_layernorm(h);
    auto [q, k, v] = project_qkv(l, x);
    apply_rope(q, k, rope);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t off = offsets[i], t = static_cast<int64_t>(prompts[i].size());
      auto ki = k.slice(2, off, off + t), vi = v.slice(2, off, off + t);
      slots_->keys[l][caches[i]->slot_].slice(1, 0, t).copy_(ki[0]);
      slots_->values[l][caches[i]->slot_].slice(1, 0, t).copy_(vi[0]);
      outs[i] = trainer::causal_attention(q.slice(2, off, off + t), ki, vi, masks[i], std::nullopt);
    }
    auto out = (n == 1 ? outs[0] : at::cat(outs, 2))
                   .transpose(1, 2)
                   .reshape({1, total, heads_ * head_dim_});
    h = h + at::linear(out, attn->o_proj->weight);
    h = h + mlp(layer, gate_up_[l], layer->post_attention_layernorm(h));
  }
  for (int64_t i = 0; i < n; ++i) caches[i]->length_ = static_cast<int64_t>(prompts[i].size());
  return logits_of(h[0].index_select(0, at::tensor(last, at::kLong).to(device)));
}

at::Tensor KvDecoder::decode(const std::vector<SequenceKvCache*>& caches,
                             const std::vector<int64_t>& tokens) {
  using at::indexing::Slice;
  torch::NoGradGuard no_grad;
  const auto b = static_cast<int64_t>(caches.size());
  FABKIT_ENFORCE(b > 0 && tokens.size() == caches.size(), "decode: one token per sequence");
  std::vector<int64_t> positions, slots;
  std::vector<char> in_batch(static_cast<size_t>(max_sequences_), 0);
  for (int64_t i = 0; i < b; ++i) {
    const SequenceKvCache& cache = *caches[i];
    FABKIT_ENFORCE(cache.slots_ == slots_ && cache.slot_ >= 0 && cache.length_ > 0,
                   "decode: a sequence must be prefilled by this decoder first");
    FABKIT_ENFORCE(!in_batch[cache.slot_], "decode: a sequence appears twice in the batch");
    in_batch[cache.slot_] = 1;
    const int64_t p = cache.length_;
    if (p >= context_length_)
      throw UsageError("a sequence holds " + std::to_string(p) +
                       " positions, the context length; "
                       "it cannot take another token");
    if (tokens[i] < 0 || tokens[i] >= vocab_size())
      throw UsageError("decode token " + std::to_string(tokens[i]) +
                       " is outside the vocabulary [0, " + std::to_string(vocab_size()) + ")");
    positions.push_back(p);
    slots.push_back(cache.slot_);
  }
  // Attention runs over the pool's first `rows` slots and first `span` positions; a row outside
  // the batch attends to its position 0 only (a finite result, dropped), and each row of the
  // batch to its own positions: all of them, or with Mistral's window the last sliding_window,
  // itself included, as attention_bias masks.
  const int64_t rows = *std::max_element(slots.begin(), slots.end()) + 1;
  const int64_t span = *std::max_element(positions.begin(), positions.end()) + 1;
  reserve(span);
  const auto& window = model_->config().sliding_window;
  bool identity = rows == b, full = true;
  auto allowed = at::zeros({rows, 1, 1, span}, at::kBool);
  auto allowed_rows = allowed.accessor<bool, 4>();
  for (int64_t r = 0; r < rows; ++r)
    if (!in_batch[r]) allowed_rows[r][0][0][0] = true;
  for (int64_t i = 0; i < b; ++i) {
    identity = identity && slots[i] == i;
    const int64_t p = positions[i];
    const int64_t start = window ? std::max<int64_t>(0, p - *window + 1) : 0;
    full = full && start == 0 && p == span - 1;
    for (int64_t j = start; j <= p; ++j) allowed_rows[slots[i]][0][0][j] = true;
  }
  const auto device = model_->device();
  // Every row sees its whole span (one length, no window): no mask, the kernel's fastest path.
  const std::optional<at::Tensor> mask =
      identity && full ? std::nullopt : std::optional<at::Tensor>(allowed.to(device));
  const auto slot_index = at::tensor(slots, at::kLong).to(device);
  const auto position_index = at::tensor(positions, at::kLong).to(device);
  auto ids = at::tensor(tokens, at::kLong).view({b, 1}).to(device);
  // Each sequence at its own position: the RoPE tables are [B, 1, 1, D].
  auto rope = model_->rope(1, position_index.view({b, 1}));
  const bool gqa = heads_ != kv_heads_;
  auto h = model_->embed(ids);
  for (size_t l = 0; l < layers_.size(); ++l) {
    auto& layer = layers_[l];
    auto& attn = layer->self_attn;
    auto x = layer->input_layernorm(h);
    auto [q, k, v] = project_qkv(l, x);
    apply_rope(q, k, rope);
    auto& keys = slots_->keys[l];
    auto& values = slots_->values[l];
    // keys[slot_i, :, position_i, :] = k_i, for every sequence at once.
    keys.index_put_({slot_index, Slice(), position_index}, k.select(2, 0));
    values.index_put_({slot_index, Slice(), position_index}, v.select(2, 0));
    auto rows_q =
        identity
            ? q
            : at::zeros({rows, heads_, 1, head_dim_}, q.options()).index_copy_(0, slot_index, q);
    auto out = at::scaled_dot_product_attention(rows_q, keys.slice(0, 0, rows).slice(2, 0, span),
                                                values.slice(0, 0, rows).slice(2, 0, span), mask,
                                                /*dropout_p=*/0.0, /*is_causal=*/false,
                                                std::nullopt, /*enable_gqa=*/gqa);
    if (!identity) out = out.index_select(0, slot_index);
    out = out.transpose(1, 2).reshape({b, 1, heads_ * head_dim_});
    h = h + at::linear(out, attn->o_proj->weight);
    h = h + mlp(layer, gate_up_[l], layer->post_attention_layernorm(h));
  }
  for (auto* cache : caches) ++cache->length_;
  return logits_of(h.select(1, 0));
}

}  // namespace fabkit::serve
