#include "trainer/model/llama.h"

#include <cmath>
#include <mutex>
#include <tuple>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/functional/activation.h>

#include "common/errors.h"
#include "trainer/model/attention.h"
#include "trainer/model/rms_norm_fp32.h"
#include "trainer/model/rope_fp32.h"
#include "trainer/model/swiglu_mlp.h"
#include "trainer/model/weight_grad_store.h"

namespace fabkit::trainer {
namespace {

torch::nn::Linear linear(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

// HF's rotary embedding: x * cos + rotate_half(x) * sin, where rotate_half swaps the two halves
// of the head dimension and negates the new first half (not interleaved pairs, Meta's original
// layout; HF checkpoints permute q/k weights so this convention holds).
torch::Tensor rotate_half(const torch::Tensor& x) {
  int64_t half = x.size(-1) / 2;
  return torch::cat({-x.slice(-1, half), x.slice(-1, 0, half)}, -1);
}

torch::Tensor apply_rope_hf(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  return x * cos + rotate_half(x) * sin;
}

// The same in fp32 with the sign folded into signed_sin ([-sin | +sin]): the swap is one roll, 3
// ops forward instead of 6, and the backward no longer zero-fills and scatters two slice
// gradients. addcmul rounds once where HF's ops round thrice, hence fp32 only.
// On the CPU one hand-written pass each way (rope_fp32.h).
torch::Tensor apply_rope_fp32(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& signed_sin) {
  if (x.is_cpu()) return rope_fp32(x, cos, signed_sin);
  return torch::addcmul(x * cos, torch::roll(x, x.size(-1) / 2, -1), signed_sin);
}

}  // namespace

RmsNormImpl::RmsNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x) {
  const int64_t h = x.size(-1);
  if (x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32) {
    // CPU: the hand-written kernel (rms_norm_fp32.h); measured ~3x faster forward + backward than
    // at::rms_norm, whose CPU backward is op by op (docs/trainer-model.md). CUDA: ATen's fused
    // kernels. The same maths: weight * x * rsqrt(mean(x^2) + eps).
    if (x.is_cpu()) return rms_norm_fp32(x, weight, eps_);
    return at::rms_norm(x, {h}, weight, eps_);
  }
  // bf16/fp16 as HF's LlamaRMSNorm: statistics and normalisation in fp32 (the fused op accumulates
  // in fp32 for these dtypes), cast back to the activations' dtype, then the weight multiplies in
  // that dtype. One fused pass instead of HF's cast, pow, mean, rsqrt, mul and cast.
  return weight * at::rms_norm(x, {h}, std::nullopt, eps_);
}

LlamaAttentionImpl::LlamaAttentionImpl(const LlamaConfig& c)
    : heads_(c.num_attention_heads), kv_heads_(c.num_key_value_heads), head_dim_(c.head_dim) {
  q_proj = register_module("q_proj", linear(c.hidden_size, heads_ * head_dim_));
  k_proj = register_module("k_proj", linear(c.hidden_size, kv_heads_ * head_dim_));
  v_proj = register_module("v_proj", linear(c.hidden_size, kv_heads_ * head_dim_));
  o_proj = register_module("o_proj", linear(heads_ * head_dim_, c.hidden_size));
}

torch::Tensor LlamaAttentionImpl::forward(const torch::Tensor& x, const RopeCache& rope,
                                          const torch::Tensor& mask) {
  int64_t b = x.size(0), t = x.size(1);
  // One GEMM for q, k and v: the weights are concatenated (a copy of the small weights, not the
  // activations) and the output split into views. One larger GEMM packs its input once and
  // replaces the backward's three input-gradient GEMMs and their sum by one.
  const int64_t q_width = heads_ * head_dim_, kv_width = kv_heads_ * head_dim_;
  auto qkv = model_linear(x, torch::cat({q_proj->weight, k_proj->weight, v_proj->weight}, 0));
  // split (one autograd node whose backward is one cat), not three narrows (each of whose
  // backward zero-fills a full-width gradient and adds it).
  auto parts = qkv.split_with_sizes({q_width, kv_width, kv_width}, -1);
  auto q = parts[0].view({b, t, heads_, head_dim_}).transpose(1, 2);
  auto k = parts[1].view({b, t, kv_heads_, head_dim_}).transpose(1, 2);
  auto v = parts[2].view({b, t, kv_heads_, head_dim_}).transpose(1, 2);
  if (x.scalar_type() == torch::kFloat32) {
    q = apply_rope_fp32(q, rope.cos, rope.signed_sin);
    k = apply_rope_fp32(k, rope.cos, rope.signed_sin);
  } else {
    q = apply_rope_hf(q, rope.cos, rope.sin);
    k = apply_rope_hf(k, rope.cos, rope.sin);
  }
  // Fused attention (attention.h); GQA reads each kv head for its group of query heads in the
  // kernel, without HF's repeat_kv copies.
  auto out = causal_attention(q, k, v, mask, std::nullopt)
                 .transpose(1, 2)
                 .reshape({b, t, heads_ * head_dim_});
  return model_linear(out, o_proj->weight);
}

LlamaMlpImpl::LlamaMlpImpl(const LlamaConfig& c) {
  gate_proj = register_module("gate_proj", linear(c.hidden_size, c.intermediate_size));
  up_proj = register_module("up_proj", linear(c.hidden_size, c.intermediate_size));
  down_proj = register_module("down_proj", linear(c.intermediate_size, c.hidden_size));
}

torch::Tensor LlamaMlpImpl::forward(const torch::Tensor& x) {
  // One autograd function (swiglu_mlp.h): one GEMM for gate and up, through a view when the two
  // weights are adjacent (a sharded unit's flat buffer), and silu(gate) and the product
  // recomputed in the backward instead of kept.
  return swiglu_mlp(x, gate_proj->weight, up_proj->weight, down_proj->weight);
}

DecoderLayerImpl::DecoderLayerImpl(const LlamaConfig& c) {
  // Registration order = HF's named_parameters order.
  self_attn = register_module("self_attn", LlamaAttention(c));
  mlp = register_module("mlp", LlamaMlp(c));
  input_layernorm = register_module("input_layernorm", RmsNorm(c.hidden_size, c.rms_norm_eps));
  post_attention_layernorm =
      register_module("post_attention_layernorm", RmsNorm(c.hidden_size, c.rms_norm_eps));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& hidden, const RopeCache& rope,
                                        const torch::Tensor& mask) {
  auto h = hidden + self_attn(input_layernorm(hidden), rope, mask);
  return h + mlp(post_attention_layernorm(h));
}

LlamaModelImpl::LlamaModelImpl(const LlamaConfig& config, torch::ScalarType dtype, uint64_t seed)
    : config_(config), dtype_(dtype) {
  if (dtype != torch::kFloat32 && dtype != torch::kBFloat16 && dtype != torch::kFloat16)
    throw UsageError("model dtype must be float32, bfloat16 or float16");
  embed_tokens = register_module(
      "embed_tokens", torch::nn::Embedding(config.vocab_size, config.hidden_size));
  layers_ = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) layers_->push_back(DecoderLayer(config));
  norm = register_module("norm", RmsNorm(config.hidden_size, config.rms_norm_eps));
  if (!config.tie_word_embeddings)
    lm_head_ = register_module("lm_head", linear(config.hidden_size, config.vocab_size));
  // inv_freq = 1 / theta^(2i/d), i = 0..d/2-1, in fp32 like HF (computed from the int64 arange).
  auto exponents = torch::arange(0, config.head_dim, 2, torch::kInt64).to(torch::kFloat32) /
                   static_cast<double>(config.head_dim);
  inv_freq_ = 1.0 / torch::pow(config.rope_theta, exponents);
  init_weights(seed);
  this->to(dtype_);
}

void LlamaModelImpl::set_compute_dtype(torch::ScalarType dtype) {
  if (dtype != torch::kFloat32 && dtype != torch::kBFloat16 && dtype != torch::kFloat16)
    throw UsageError("compute dtype must be float32, bfloat16 or float16");
  dtype_ = dtype;
}

void LlamaModelImpl::set_device(torch::Device device) {
  device_ = device;
  inv_freq_ = inv_freq_.to(device);
}

void LlamaModelImpl::init_weights(uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  double std = config_.initializer_range;
  // One generator walked in HF parameter order: the same seed gives the same model.
  for (auto& [name, p] : hf_named_parameters()) {
    bool is_norm = name.find("norm.weight") != std::string::npos;
    if (is_norm) {
      p.fill_(1.0);
      continue;
    }
    auto tmp = torch::empty(p.sizes(), torch::kFloat32);
    tmp.normal_(0.0, std, gen);
    p.copy_(tmp);
  }
  if (config_.pad_token_id) embed_tokens->weight[*config_.pad_token_id].zero_();
}

torch::Tensor LlamaModelImpl::embed(const torch::Tensor& input_ids) {
  return embed_tokens(input_ids);
}

RopeCache LlamaModelImpl::rope_tables(const torch::Tensor& positions) const {
  auto pos = positions.dim() == 1 ? positions.unsqueeze(0) : positions;
  auto freqs = pos.to(torch::kFloat32).unsqueeze(-1) * inv_freq_;  // [B,T,D/2]
  auto emb = torch::cat({freqs, freqs}, -1).unsqueeze(1);          // [B,1,T,D]
  auto cos = emb.cos(), sin = emb.sin();
  const int64_t half = config_.head_dim / 2;
  auto signed_sin = torch::cat({-sin.slice(-1, 0, half), sin.slice(-1, half)}, -1);
  return RopeCache{cos.to(dtype_), sin.to(dtype_), signed_sin};
}

RopeCache LlamaModelImpl::rope(int64_t seq_len, const torch::Tensor& positions) const {
  // Explicit positions (left padding, packed documents) differ batch to batch: computed each time.
  if (positions.defined()) return rope_tables(positions.to(device_));
  // 0..T-1 are the same every step: computed once per (length, device, dtype). The tables are
  // constants (no autograd history) and nothing writes into them, so sharing them is safe.
  const RopeKey key{seq_len, device_.str(), dtype_};
  std::lock_guard<std::mutex> lock(rope_cache_->mutex);
  auto it = rope_cache_->tables.find(key);
  if (it != rope_cache_->tables.end()) return it->second;
  // A handful of lengths at most in practice (training, evaluation); bound it anyway.
  if (rope_cache_->tables.size() >= kRopeCacheEntries) rope_cache_->tables.clear();
  torch::NoGradGuard no_grad;
  RopeCache tables =
      rope_tables(torch::arange(seq_len, torch::TensorOptions(torch::kInt64).device(device_)));
  rope_cache_->tables.emplace(key, tables);
  return tables;
}

torch::Tensor LlamaModelImpl::attention_bias(int64_t seq_len, const torch::Tensor& attention_mask) const {
  const bool window_bites = config_.sliding_window && *config_.sliding_window < seq_len;
  bool padded = false;
  if (attention_mask.defined()) {
    FABKIT_ENFORCE(attention_mask.dim() == 2 && attention_mask.size(1) == seq_len,
                   "attention_mask must be [batch, seq_len]");
    // A batch without padding is plain causal, which on a GPU lets SDPA run flash attention
    // instead of a masked kernel. Reading that here is a host read (a device sync on a GPU): the
    // training step avoids it by passing no mask for unpadded micro-batches (StepEngine::load).
    padded = !attention_mask.all().item<bool>();
  }
  if (!window_bites && !padded) return {};  // causal only: SDPA's is_causal
  const auto index_options = torch::TensorOptions(torch::kInt64).device(device_);
  auto i = torch::arange(seq_len, index_options).unsqueeze(1);
  auto j = torch::arange(seq_len, index_options).unsqueeze(0);
  auto allowed = j <= i;  // causal
  if (window_bites)
    // Mistral: a query sees the last sliding_window positions, itself included (HF >= 4.40).
    allowed = allowed.logical_and(i - j < *config_.sliding_window);
  allowed = allowed.unsqueeze(0).unsqueeze(0);  // [1,1,T,T]
  if (padded) {
    allowed = allowed.logical_and((attention_mask.to(device_) != 0).unsqueeze(1).unsqueeze(2));
    // A query that may attend no key (left padding before the first token) would divide by a
    // zero softmax sum; such a row is padding itself, its output feeds no real token, so it
    // attends everything instead, as HF's SDPA path does. Finite in every dtype and kernel.
    allowed = allowed.logical_or(allowed.logical_not().all(-1, /*keepdim=*/true));
  }
  return allowed;
}

std::vector<DecoderLayer> LlamaModelImpl::layers() const {
  std::vector<DecoderLayer> out;
  for (const auto& m : *layers_) out.emplace_back(std::dynamic_pointer_cast<DecoderLayerImpl>(m));
  return out;
}

torch::Tensor LlamaModelImpl::final_norm(const torch::Tensor& hidden) { return norm(hidden); }

torch::Tensor LlamaModelImpl::lm_head(const torch::Tensor& hidden) {
  if (lm_head_) return model_linear(hidden, lm_head_->weight);
  return torch::matmul(hidden, embed_tokens->weight.t());
}

torch::Tensor LlamaModelImpl::forward(const torch::Tensor& input_ids,
                                      const torch::Tensor& attention_mask,
                                      const torch::Tensor& positions) {
  if (input_ids.dim() != 2) throw UsageError("input_ids must be [batch, seq_len]");
  int64_t t = input_ids.size(1);
  auto h = embed(input_ids);
  auto r = rope(t, positions);
  auto bias = attention_bias(t, attention_mask);
  for (auto& layer : layers()) h = layer->forward(h, r, bias);
  return lm_head(final_norm(h));
}

std::vector<std::pair<std::string, torch::Tensor>> LlamaModelImpl::hf_named_parameters() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& item : named_parameters(/*recurse=*/true)) {
    const std::string& n = item.key();
    out.emplace_back(n.rfind("lm_head.", 0) == 0 ? n : "model." + n, item.value());
  }
  return out;
}

}  // namespace fabkit::trainer
