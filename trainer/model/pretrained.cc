#include "trainer/model/pretrained.h"

#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <set>

#include "common/atomic_file.h"
#include "common/errors.h"

namespace fabkit::trainer {
namespace fs = std::filesystem;

std::string dtype_name(torch::ScalarType t) {
  if (t == torch::kFloat32) return "float32";
  if (t == torch::kBFloat16) return "bfloat16";
  if (t == torch::kFloat16) return "float16";
  throw UsageError(std::string("unsupported model dtype ") + c10::toString(t));
}

torch::ScalarType parse_dtype_name(const std::string& n) {
  if (n == "float32" || n == "fp32") return torch::kFloat32;
  if (n == "bfloat16" || n == "bf16") return torch::kBFloat16;
  if (n == "float16" || n == "fp16") return torch::kFloat16;
  throw UsageError("dtype \"" + n + "\": expected float32, bfloat16 or float16");
}

std::vector<std::string> load_weights(LlamaModelImpl& model, const SafetensorsCheckpoint& ckpt,
                                      bool allow_dtype_cast) {
  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  for (auto& [name, param] : model.hf_named_parameters()) {
    if (!ckpt.contains(name))
      throw UsageError(ckpt.files().front().string() + (ckpt.files().size() > 1 ? " (and shards)" : "") +
                       ": tensor \"" + name + "\" is missing; the config describes a model this "
                       "checkpoint does not hold (wrong config.json or an incomplete download?)");
    auto [file, entry] = ckpt.locate(name);
    std::string where = file->path().string() + ": tensor \"" + name + "\" (data offset " +
                        std::to_string(entry->begin) + ")";
    if (entry->shape != param.sizes().vec())
      throw UsageError(where + " has shape " + c10::str(c10::IntArrayRef(entry->shape)) +
                       " but the model expects " + c10::str(param.sizes()) +
                       " from config.json — config and weights disagree");
    at::ScalarType file_type = torch_dtype_of(entry->dtype, where);
    if (file_type != param.scalar_type()) {
      bool both_float = at::isFloatingType(file_type) && at::isFloatingType(param.scalar_type());
      if (!both_float || !allow_dtype_cast)
        throw UsageError(where + " is " + entry->dtype + " but the model parameter is " +
                         safetensors_dtype_of(param.scalar_type()) +
                         (both_float ? " (dtype conversion disabled)" : " — not a floating-point weight"));
    }
    param.copy_(file->tensor(*entry));
    used.insert(name);
  }
  std::vector<std::string> ignored;
  for (const auto& n : ckpt.names())
    if (!used.count(n)) ignored.push_back(n);
  return ignored;
}

LoadedModel load_pretrained(const fs::path& dir, const LoadOptions& options) {
  if (!fs::is_directory(dir))
    throw UsageError(dir.string() + ": not a directory; --model needs an HF model directory "
                                    "(config.json [+ model.safetensors])");
  LoadedModel out;
  out.config = load_llama_config(dir / "config.json");
  check_model_fits_memory(out.config, physical_memory_bytes(), (dir / "config.json").string());
  out.model = LlamaModel(out.config, options.dtype, options.seed);
  if (!SafetensorsCheckpoint::present_in(dir)) {
    if (fs::exists(dir / "pytorch_model.bin") || fs::exists(dir / "pytorch_model.bin.index.json"))
      throw UsageError(dir.string() + ": only pytorch_model.bin weights (pickle) found; fabtrain reads "
                                      "safetensors: convert them, or remove them to start from random weights");
    out.random_init = true;
    return out;
  }
  SafetensorsCheckpoint ckpt(dir);
  out.weight_files = ckpt.files();
  out.ignored_tensors = load_weights(*out.model, ckpt, options.allow_dtype_cast);
  return out;
}

std::vector<fs::path> save_pretrained(const LlamaModelImpl& model, const fs::path& dir,
                                      uint64_t max_shard_bytes) {
  fs::create_directories(dir);
  LlamaConfig c = model.config();
  c.torch_dtype = dtype_name(model.dtype());
  auto files = write_safetensors_checkpoint(dir, model.hf_named_parameters(), max_shard_bytes);
  write_file_atomically(dir / "config.json", to_hf_json(c).dump(2) + "\n");
  files.push_back(dir / "config.json");
  return files;
}

}  // namespace fabkit::trainer
