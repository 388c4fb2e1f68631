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

// Limits on the size fields, checked before anything is allocated: a config.json is a file
// people edit, and num_hidden_layers = 1e7 used to allocate for 20 s before dying of bad_alloc.
// Each is several times the largest published Llama/Mistral (Llama 3.1 405B: 126 layers, hidden
// 16384, 128 heads, head_dim 128, intermediate 53248, vocab 128256; Llama 4 Scout: 10M
// positions), so no real model meets them.
inline constexpr int64_t kMaxHiddenLayers = 1024;
inline constexpr int64_t kMaxHiddenSize = 65536;
inline constexpr int64_t kMaxAttentionHeads = 1024;  // and key/value heads
inline constexpr int64_t kMaxHeadDim = 1024;
inline constexpr int64_t kMaxIntermediateSize = 262144;
inline constexpr int64_t kMaxVocabSize = 4194304;            // 2^22
inline constexpr int64_t kMaxPositionEmbeddings = 16777216;  // 2^24; also sliding_window
// The fields' product: the parameters the model would have (2.5x Llama 3.1 405B). Every rank
// builds the whole model on the CPU in float32 first, so a model is also refused when that would
// not fit this host's memory (check_model_fits_memory).
inline constexpr int64_t kMaxParameters = 1000000000000;  // 1e12

// Parses an HF config.json. Throws UsageError naming the file and the field (missing, wrong
// type, out of range, over a limit above, unsupported value) and what to change.
LlamaConfig load_llama_config(const std::filesystem::path& path);
LlamaConfig parse_llama_config(const Json& doc, const std::string& source);

// The parameters LlamaModel(c) allocates: embeddings, each layer's four attention projections,
// three MLP projections and two norms, the final norm, and lm_head unless tied. Exact (the model
// test compares it with the built model); at most kMaxParameters for a parsed config.
int64_t parameter_count(const LlamaConfig& c);

// Building the model holds every parameter in float32 on the CPU (then converts to the run's
// dtype): refuses, with UsageError naming `source`, the parameter count, the bytes needed and the
// host's, a model that would not fit memory_bytes (the host's physical memory).
void check_model_fits_memory(const LlamaConfig& c, uint64_t memory_bytes,
                             const std::string& source);
// This host's physical memory (sysconf), for check_model_fits_memory.
uint64_t physical_memory_bytes();

// The config.json HF transformers reads back (save_pretrained's field names).
Json to_hf_json(const LlamaConfig& c);

}  // namespace fabkit::trainer
