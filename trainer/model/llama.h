// The Llama-family decoder (Llama 1/2/3-style, Mistral) in LibTorch, numerically following HF
// transformers' eager LlamaForCausalLM so HF checkpoints load by name and give the same logits.
// The pieces are public and callable one at a time: parallel/ wraps each DecoderLayer (gather
// parameters, run, free) without this file knowing about ranks.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "trainer/model/llama_config.h"

namespace fabkit::trainer {

// cos/sin of the rotary angles for the positions of one batch, shaped [B or 1, 1, T, head_dim]
// so they broadcast over heads; computed in fp32 and cast to the activations' dtype as HF does.
// fp32 (training) takes a shorter path with the same maths: signed_sin carries rotate_half's sign
// ([-sin | +sin]) so the rotation is one roll. bf16/fp16 keep HF's exact op order, since each op
// rounds.
struct RopeCache {
  torch::Tensor cos, sin;    // HF's tables
  torch::Tensor signed_sin;  // fp32 path
};

class RmsNormImpl : public torch::nn::Module {
 public:
  RmsNormImpl(int64_t dim, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RmsNorm);

class LlamaAttentionImpl : public torch::nn::Module {
 public:
  explicit LlamaAttentionImpl(const LlamaConfig& c);
  // mask: LlamaModelImpl::attention_bias (undefined = causal only; bool, true = attend).
  torch::Tensor forward(const torch::Tensor& x, const RopeCache& rope, const torch::Tensor& mask);
  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};

 private:
  int64_t heads_, kv_heads_, head_dim_;
};
TORCH_MODULE(LlamaAttention);

class LlamaMlpImpl : public torch::nn::Module {
 public:
  explicit LlamaMlpImpl(const LlamaConfig& c);
  torch::Tensor forward(const torch::Tensor& x);  // down(silu(gate(x)) * up(x))
  torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(LlamaMlp);

class DecoderLayerImpl : public torch::nn::Module {
 public:
  explicit DecoderLayerImpl(const LlamaConfig& c);
  torch::Tensor forward(const torch::Tensor& hidden, const RopeCache& rope,
                        const torch::Tensor& mask);
  LlamaAttention self_attn{nullptr};
  LlamaMlp mlp{nullptr};
  RmsNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
};
TORCH_MODULE(DecoderLayer);

class LlamaModelImpl : public torch::nn::Module {
 public:
  // Parameters start from init_weights(seed) and are then cast to dtype (so a seed gives the same
  // model in fp32 and bf16, up to rounding).
  LlamaModelImpl(const LlamaConfig& config, torch::ScalarType dtype = torch::kFloat32,
                 uint64_t seed = 0);

  const LlamaConfig& config() const { return config_; }
  torch::ScalarType dtype() const { return dtype_; }
  // Mixed precision: the activations' dtype (RoPE tables, attention bias) when the parameters'
  // storage belongs to the sharded model, which hands them out in this dtype and keeps fp32
  // master copies. Does not cast the parameters.
  void set_compute_dtype(torch::ScalarType dtype);
  // GPU training: the device the activations live on (RoPE tables, attention bias, positions).
  // Moves only the model's own buffers; the parameters' storage belongs to the sharded model,
  // which hands them out on its device.
  void set_device(torch::Device device);
  torch::Device device() const { return device_; }

  // The pieces, in the order forward() runs them.
  torch::Tensor embed(const torch::Tensor& input_ids);  // [B,T] int64 -> [B,T,H]
  // positions: [T] or [B,T] int64; undefined -> 0..T-1 (HF's default when position_ids is None),
  // whose tables are computed once per (length, device, dtype) and shared by later calls.
  RopeCache rope(int64_t seq_len, const torch::Tensor& positions = {}) const;
  // What the attention masks, for attention_mask [B,T] (1 = token, 0 = padding; undefined = none):
  // undefined when plain causal attention is exact (no padding, no sliding window shorter than
  // seq_len), so the kernels run is_causal without a mask; else a bool [B or 1, 1, T, T], true =
  // may attend: causal, Mistral's window, padded keys masked, and any row left with no key at all
  // (a padded query before the first token) unmasked whole, so no row's softmax is empty.
  torch::Tensor attention_bias(int64_t seq_len, const torch::Tensor& attention_mask = {}) const;
  std::vector<DecoderLayer> layers() const;
  torch::Tensor final_norm(const torch::Tensor& hidden);
  torch::Tensor lm_head(const torch::Tensor& hidden);  // tied: the embedding matrix

  // logits [B,T,vocab] in the model dtype.
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask = {},
                        const torch::Tensor& positions = {});

  // (HF name, parameter) in HF's registration order: model.embed_tokens.weight,
  // model.layers.N.{self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj, input_layernorm,
  // post_attention_layernorm}.weight, model.norm.weight, lm_head.weight (absent when tied).
  std::vector<std::pair<std::string, torch::Tensor>> hf_named_parameters() const;

  // HF's _init_weights: Linear and Embedding ~ N(0, initializer_range), the padding row of the
  // embedding zero, RMSNorm weights one. Deterministic for a seed.
  void init_weights(uint64_t seed);

 private:
  using RopeKey = std::tuple<int64_t, std::string, torch::ScalarType>;  // length, device, dtype
  struct RopeTableCache {
    std::mutex mutex;  // pipeline stages of one process may ask from their own threads
    std::map<RopeKey, RopeCache> tables;
  };
  static constexpr size_t kRopeCacheEntries = 8;
  RopeCache rope_tables(const torch::Tensor& positions) const;  // positions on device_

  LlamaConfig config_;
  torch::ScalarType dtype_;
  torch::Device device_{torch::kCPU};
  torch::Tensor inv_freq_;  // fp32 [head_dim/2], not a parameter
  std::shared_ptr<RopeTableCache> rope_cache_ = std::make_shared<RopeTableCache>();
  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers_{nullptr};
  RmsNorm norm{nullptr};
  torch::nn::Linear lm_head_{nullptr};  // null when tied
};
TORCH_MODULE(LlamaModel);

}  // namespace fabkit::trainer
