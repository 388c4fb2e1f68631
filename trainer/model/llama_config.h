// The Llama-family architecture as Hugging Face describes it in config.json (LlamaConfig /
// MistralConfig). Only what the decoder needs; unsupported variants (rope_scaling, biases,
// another activation) are refused by name rather than silently ignored.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "common/json.h"

namespace fabkit::trainer {

struct LlamaConfig {
  std::string architecture = "LlamaForCausalLM";  // or MistralForCausalLM
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // default: num_attention_heads (plain multi-head attention)
  int64_t head_dim = 0;             // default: hidden_size / num_attention_heads
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  double initializer_range = 0.02;
  bool tie_word_embeddings = false;
  std::string torch_dtype = "float32";  // as written in the file; the run may choose another
  std::optional<int64_t> bos_token_id;
  std::optional<int64_t> eos_token_id;
  std::optional<int64_t> pad_token_id;
  // Mistral: each token attends to at most this many previous positions (itself included).
  std::optional<int64_t> sliding_window;
};

// Parses an HF config.json. Throws UsageError naming the file and the field (missing, wrong
// type, out of range, unsupported value) and what to change.
LlamaConfig load_llama_config(const std::filesystem::path& path);
LlamaConfig parse_llama_config(const Json& doc, const std::string& source);

// The config.json HF transformers reads back (save_pretrained's field names).
Json to_hf_json(const LlamaConfig& c);

}  // namespace fabkit::trainer
