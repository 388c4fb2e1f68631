#include "trainer/serve/engine/kv_cache.h"

#include <algorithm>
#include <optional>
#include <string>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "common/errors.h"
#include "trainer/model/attention.h"
#include "trainer/model/rope_fp32.h"

namespace fabkit::serve {
namespace {

// A fresh cache starts with room for this many positions past the prompt, so the first decode
// steps do not reallocate.
constexpr int64_t kMinCapacity = 16;

at::Tensor rotate_half(const at::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.slice(-1, half), x.slice(-1, 0, half)}, -1);
}

// HF's act_fn(gate_proj(x)) * up_proj(x), then down_proj: the same ops as the training MLP
// (swiglu_mlp.h) but with gate and up as two GEMMs over the model's own weights. The training
// path concatenates the two weights into one GEMM, a copy of two thirds of the MLP's weights per
// layer per call, which for a decode step of a few rows costs more than the GEMM itself.
at::Tensor mlp(const trainer::DecoderLayer& layer, const at::Tensor& x) {
  const auto& m = layer->mlp;
  auto h = at::silu(at::linear(x, m->gate_proj->weight)).mul_(at::linear(x, m->up_proj->weight));
  return at::linear(h, m->down_proj->weight);
}

}  // namespace

KvDecoder::KvDecoder(trainer::LlamaModel model, int64_t context_length)
    : model_(std::move(model)), context_length_(context_length) {
  const auto& c = model_->config();
  if (context_length_ < 1)
    throw UsageError("context length is " + std::to_string(context_length_) +
                     "; it must be at least 1 (default: the model's max_position_embeddings)");
  layers_ = model_->layers();
  heads_ = c.num_attention_heads;
  kv_heads_ = c.num_key_value_heads;
  head_dim_ = c.head_dim;
}

void KvDecoder::reserve(SequenceKvCache& cache, int64_t length) const {
  if (length <= cache.capacity_) return;
  const int64_t capacity =
      std::min(context_length_, std::max({length, 2 * cache.capacity_, length + kMinCapacity}));
  const auto options = at::TensorOptions(model_->dtype()).device(model_->device());
  cache.keys_.resize(layers_.size());
  cache.values_.resize(layers_.size());
  for (size_t l = 0; l < layers_.size(); ++l) {
    for (auto* slot : {&cache.keys_[l], &cache.values_[l]}) {
      auto grown = at::empty({kv_heads_, capacity, head_dim_}, options);
      if (cache.length_ > 0)
        grown.slice(1, 0, cache.length_).copy_(slot->slice(1, 0, cache.length_));
      *slot = grown;
    }
  }
  cache.capacity_ = capacity;
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

at::Tensor KvDecoder::logits_of_last(const at::Tensor& hidden) {
  // Norm and head are per position: running them on the last one alone gives the same rows as
  // on the whole sequence, without a [T, vocab] GEMM for a prompt.
  auto last = hidden.select(1, hidden.size(1) - 1);
  return model_->lm_head(model_->final_norm(last)).to(at::kFloat).cpu().contiguous();
}

at::Tensor KvDecoder::prefill(SequenceKvCache& cache, const std::vector<int64_t>& prompt) {
  torch::NoGradGuard no_grad;
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
  cache = SequenceKvCache{};
  reserve(cache, t);
  const auto device = model_->device();
  auto ids = at::tensor(prompt, at::kLong).view({1, t}).to(device);
  auto h = model_->embed(ids);
  auto rope = model_->rope(t);
  // Causal, and Mistral's window when it is shorter than the prompt: the training forward's mask.
  auto mask = model_->attention_bias(t);
  for (size_t l = 0; l < layers_.size(); ++l) {
    auto& layer = layers_[l];
    auto& attn = layer->self_attn;
    auto x = layer->input_layernorm(h);
    auto q = at::linear(x, attn->q_proj->weight).view({1, t, heads_, head_dim_}).transpose(1, 2);
    auto k = at::linear(x, attn->k_proj->weight).view({1, t, kv_heads_, head_dim_}).transpose(1, 2);
    auto v = at::linear(x, attn->v_proj->weight).view({1, t, kv_heads_, head_dim_}).transpose(1, 2);
    apply_rope(q, k, rope);
    cache.keys_[l].slice(1, 0, t).copy_(k[0]);
    cache.values_[l].slice(1, 0, t).copy_(v[0]);
    auto out = trainer::causal_attention(q, k, v, mask, std::nullopt)
                   .transpose(1, 2)
                   .reshape({1, t, heads_ * head_dim_});
    h = h + at::linear(out, attn->o_proj->weight);
    h = h + mlp(layer, layer->post_attention_layernorm(h));
  }
  cache.length_ = t;
  return logits_of_last(h)[0];
}

at::Tensor KvDecoder::decode(const std::vector<SequenceKvCache*>& caches,
                             const std::vector<int64_t>& tokens) {
  torch::NoGradGuard no_grad;
  const auto b = static_cast<int64_t>(caches.size());
  FABKIT_ENFORCE(b > 0 && tokens.size() == caches.size(), "decode: one token per sequence");
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < b; ++i) {
    const int64_t p = caches[i]->length_;
    FABKIT_ENFORCE(p > 0, "decode: a sequence must be prefilled first");
    if (p >= context_length_)
      throw UsageError("a sequence holds " + std::to_string(p) +
                       " positions, the context length; "
                       "it cannot take another token");
    if (tokens[i] < 0 || tokens[i] >= vocab_size())
      throw UsageError("decode token " + std::to_string(tokens[i]) +
                       " is outside the vocabulary [0, " + std::to_string(vocab_size()) + ")");
    positions.push_back(p);
  }
  for (auto* cache : caches) reserve(*cache, cache->length_ + 1);
  const auto device = model_->device();
  auto ids = at::tensor(tokens, at::kLong).view({b, 1}).to(device);
  // Each sequence at its own position: the RoPE tables are [B, 1, 1, D].
  auto rope = model_->rope(1, at::tensor(positions, at::kLong).view({b, 1}));
  const auto& window = model_->config().sliding_window;
  const bool gqa = heads_ != kv_heads_;
  auto h = model_->embed(ids);
  std::vector<at::Tensor> outs(b);
  for (size_t l = 0; l < layers_.size(); ++l) {
    auto& layer = layers_[l];
    auto& attn = layer->self_attn;
    auto x = layer->input_layernorm(h);
    auto q = at::linear(x, attn->q_proj->weight).view({b, 1, heads_, head_dim_}).transpose(1, 2);
    auto k = at::linear(x, attn->k_proj->weight).view({b, 1, kv_heads_, head_dim_}).transpose(1, 2);
    auto v = at::linear(x, attn->v_proj->weight).view({b, 1, kv_heads_, head_dim_}).transpose(1, 2);
    apply_rope(q, k, rope);
    for (int64_t i = 0; i < b; ++i) {
      const int64_t p = positions[i];
      auto& keys = caches[i]->keys_[l];
      auto& values = caches[i]->values_[l];
      keys.select(1, p).copy_(k[i].select(1, 0));
      values.select(1, p).copy_(v[i].select(1, 0));
      // The one new query sees every cached position (causal by construction), or with Mistral's
      // window the last sliding_window of them, itself included, as attention_bias masks.
      const int64_t start = window ? std::max<int64_t>(0, p - *window + 1) : 0;
      outs[i] = at::scaled_dot_product_attention(
          q[i].unsqueeze(0), keys.slice(1, start, p + 1).unsqueeze(0),
          values.slice(1, start, p + 1).unsqueeze(0), std::nullopt, /*dropout_p=*/0.0,
          /*is_causal=*/false, std::nullopt, /*enable_gqa=*/gqa);
    }
    auto out = at::cat(outs, 0).transpose(1, 2).reshape({b, 1, heads_ * head_dim_});
    h = h + at::linear(out, attn->o_proj->weight);
    h = h + mlp(layer, layer->post_attention_layernorm(h));
  }
  for (auto* cache : caches) ++cache->length_;
  return logits_of_last(h);
}

}  // namespace fabkit::serve
