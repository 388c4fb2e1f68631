// `fabtrain export --checkpoint DIR --out DIR`: gather a sharded checkpoint into HF safetensors +
// config.json (+ the tokenizer files of the model directory it was trained from).
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <iostream>

#include "common/errors.h"
#include "trainer/app/commands.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/model/pretrained.h"

namespace fs = std::filesystem;

namespace fabkit::trainer {
namespace {

struct ExportOptions {
  std::string checkpoint;
  std::string out;
};

// A pipeline run keeps each stage's units in OUTPUT/pipeline-stage-<s>-of-<S>/checkpoint-<step>
// (app/pipeline_checkpoint.h): given any stage's directory, the same step of every stage is
// gathered, so the export holds the whole model.
GatheredCheckpoint gather_all_stages(const fs::path& checkpoint) {
  GatheredCheckpoint g = gather_checkpoint(checkpoint);
  const fs::path dir = fs::absolute(checkpoint).lexically_normal();
  const fs::path stage_dir = dir.filename().empty() ? dir.parent_path().parent_path() : dir.parent_path();
  const fs::path name = dir.filename().empty() ? dir.parent_path().filename() : dir.filename();
  std::smatch m;
  const std::string stage_name = stage_dir.filename().string();
  if (!std::regex_match(stage_name, m, std::regex(R"(pipeline-stage-(\d+)-of-(\d+))"))) return g;
  const int own = std::stoi(m[1].str()), stages = std::stoi(m[2].str());
  for (int s = 0; s < stages; ++s) {
    if (s == own) continue;
    const fs::path other =
        stage_dir.parent_path() / ("pipeline-stage-" + std::to_string(s) + "-of-" + std::to_string(stages)) / name;
    if (!fs::exists(other / "manifest.json")) {
      throw UsageError(checkpoint.string() + " is stage " + std::to_string(own) + " of a " + std::to_string(stages) +
                       "-stage pipeline run, but " + other.string() +
                       " (the same step of stage " + std::to_string(s) + ") is missing or incomplete");
    }
    GatheredCheckpoint more = gather_checkpoint(other);
    for (auto& p : more.params) g.params.push_back(std::move(p));
  }
  return g;
}

int run_export(const ExportOptions& o) {
  GatheredCheckpoint g = gather_all_stages(o.checkpoint);
  const fs::path cfg_tmp = fs::path(o.out) / ".source-config.json";
  fs::create_directories(o.out);
  {
    std::ofstream f(cfg_tmp);
    f << g.manifest.at("model_config").dump(2);
  }
  LlamaConfig config = load_llama_config(cfg_tmp);
  fs::remove(cfg_tmp);
  check_model_fits_memory(config, physical_memory_bytes(), o.checkpoint + " (model_config)");
  LlamaModel model(config, torch::kFloat32, 0);
  std::map<std::string, const FullTensor*> by_name;
  for (const auto& [name, t] : g.params) by_name[name] = &t;
  torch::NoGradGuard no_grad;
  for (auto& [name, p] : model->hf_named_parameters()) {
    auto it = by_name.find(name);
    if (it == by_name.end()) throw UsageError(o.checkpoint + ": the checkpoint has no tensor " + name);
    if (it->second->shape != p.sizes().vec()) throw UsageError(o.checkpoint + ": tensor " + name + " has another shape than config.json says");
    p.copy_(torch::from_blob(const_cast<float*>(it->second->values.data()), p.sizes(), torch::kFloat32));
  }
  auto files = save_pretrained(*model, o.out);
  const fs::path src = g.manifest.value("model_dir", "");
  for (const char* name : {"tokenizer.model", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json"}) {
    std::error_code ec;
    if (!src.empty() && fs::exists(src / name)) fs::copy_file(src / name, fs::path(o.out) / name, fs::copy_options::overwrite_existing, ec);
  }
  std::cout << "exported step " << g.manifest.at("step") << " of " << o.checkpoint << " to " << o.out << " ("
            << files.size() << " files)" << std::endl;
  return 0;
}

}  // namespace

void register_export_command(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand("export", "gather a sharded checkpoint into HF safetensors + config.json");
  cmd->add_option("--checkpoint", opts->checkpoint, "OUTPUT/checkpoint-NNNNNNNN")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--out", opts->out, "directory for model.safetensors + config.json")->required();
  cmd->callback([opts, exit_code] { *exit_code = run_export(*opts); });
}

}  // namespace fabkit::trainer
