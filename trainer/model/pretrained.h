// An HF model directory <-> a LlamaModel: config.json, then weights from safetensors by HF name
// (shape- and dtype-checked), or a seeded random initialisation when the directory has a config
// and no weights (training from scratch). Saving writes what transformers' from_pretrained reads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "trainer/io/safetensors.h"
#include "trainer/model/llama.h"

namespace fabkit::trainer {

struct LoadOptions {
  torch::ScalarType dtype = torch::kFloat32;
  uint64_t seed = 0;  // for the random initialisation
  // Floating-point checkpoint tensors of another float dtype are converted (bf16 weights into an
  // fp32 run, as from_pretrained(torch_dtype=...) does). false: any dtype difference is an error.
  bool allow_dtype_cast = true;
};

struct LoadedModel {
  LlamaConfig config;
  LlamaModel model{nullptr};
  bool random_init = false;                           // no weights in the directory
  std::vector<std::filesystem::path> weight_files;
  std::vector<std::string> ignored_tensors;           // in the checkpoint, not in the model
};

LoadedModel load_pretrained(const std::filesystem::path& model_dir, const LoadOptions& options = {});

// Copies every HF-named parameter from the checkpoint. UsageError naming the checkpoint file, the
// tensor and what differs: missing tensor, shape mismatch, non-float or (strict) other dtype.
// Returns checkpoint tensors the model has no use for (e.g. rotary_emb.inv_freq of old exports).
std::vector<std::string> load_weights(LlamaModelImpl& model, const SafetensorsCheckpoint& ckpt,
                                      bool allow_dtype_cast);

// Writes config.json (torch_dtype = the model's) and the weights, sharded above max_shard_bytes.
constexpr uint64_t kDefaultMaxShardBytes = 5ull * 1000 * 1000 * 1000;  // transformers' "5GB"
std::vector<std::filesystem::path> save_pretrained(const LlamaModelImpl& model,
                                                   const std::filesystem::path& dir,
                                                   uint64_t max_shard_bytes = kDefaultMaxShardBytes);

std::string dtype_name(torch::ScalarType t);           // "float32" | "bfloat16" | "float16"
torch::ScalarType parse_dtype_name(const std::string& name);  // UsageError otherwise

}  // namespace fabkit::trainer
