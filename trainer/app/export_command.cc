// `fabtrain export --checkpoint DIR --out DIR`: gather a sharded checkpoint into HF safetensors +
// config.json (+ the tokenizer files of the model directory it was trained from).
//
// The checkpoint may be another user's (root exports what a job wrote), so everything it says is
// checked before anything is written: every shard is opened beneath the checkpoint directory and
// every offset and size checked against the bytes there (checkpoint.h), the model directory's files
// are read beneath it (export_output.h), and the files are written into a staging directory that
// becomes --out only once complete.
#include <torch/torch.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <regex>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/regular_file.h"
#include "trainer/app/commands.h"
#include "trainer/app/export_output.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/model/pretrained.h"

namespace fs = std::filesystem;

namespace fabkit::trainer {
namespace {

struct ExportOptions {
  std::string checkpoint;
  std::string out;
  std::string model_dir;  // where the tokenizer files come from; empty: the manifest's model_dir
};

// "pipeline-stage-<s>-of-<S>" -> {s, S}; nullopt for any other name (or numbers out of range).
std::optional<std::pair<int, int>> pipeline_stage_of(const std::string& name) {
  std::smatch m;
  if (!std::regex_match(name, m, std::regex(R"(pipeline-stage-(\d{1,6})-of-(\d{1,6}))"))) return std::nullopt;
  const int own = std::stoi(m[1].str()), stages = std::stoi(m[2].str());
  if (stages < 1 || own >= stages) return std::nullopt;
  return std::make_pair(own, stages);
}

// A pipeline run keeps each stage's units in OUTPUT/pipeline-stage-<s>-of-<S>/checkpoint-<step>
// (app/pipeline_checkpoint.h): given any stage's directory, the same step of every stage is
// gathered, so the export holds the whole model. The other stages are opened beneath OUTPUT.
GatheredCheckpoint gather_all_stages(const fs::path& checkpoint) {
  GatheredCheckpoint g = gather_checkpoint(checkpoint);
  fs::path dir = fs::absolute(checkpoint).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();
  const fs::path stage_dir = dir.parent_path();
  const auto stage = pipeline_stage_of(stage_dir.filename().string());
  if (!stage) return g;
  const auto [own, stages] = *stage;
  const fs::path run_dir = stage_dir.parent_path();
  const UniqueFd run_fd = open_directory(run_dir, "pipeline run " + run_dir.string());
  for (int s = 0; s < stages; ++s) {
    if (s == own) continue;
    const std::string rel = "pipeline-stage-" + std::to_string(s) + "-of-" + std::to_string(stages) + "/" +
                            dir.filename().string();
    GatheredCheckpoint more;
    try {
      const UniqueFd other = open_directory_beneath(run_fd.get(), rel, (run_dir / rel).string());
      more = gather_checkpoint(other.get(), run_dir / rel);
    } catch (const UsageError& e) {
      throw UsageError(checkpoint.string() + " is stage " + std::to_string(own) + " of a " + std::to_string(stages) +
                       "-stage pipeline run, but " + (run_dir / rel).string() + " (the same step of stage " +
                       std::to_string(s) + ") is missing or incomplete: " + e.what());
    }
    for (auto& p : more.params) g.params.push_back(std::move(p));
  }
  return g;
}

int run_export(const ExportOptions& o) {
  // 1. Read and check everything; nothing is written yet.
  GatheredCheckpoint g = gather_all_stages(o.checkpoint);
  const std::string mpath = (fs::path(o.checkpoint) / "manifest.json").string();
  if (!g.manifest.contains("model_config")) throw UsageError(mpath + ": field \"model_config\" is missing");
  LlamaConfig config = parse_llama_config(g.manifest.at("model_config"), mpath + " (model_config)");
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
  std::vector<std::string> notes;
  const std::vector<ModelDirFile> extra = read_model_dir_files(o.model_dir, g.manifest, mpath, &notes);

  // 2. Write into a staging directory beside --out; it becomes --out only once complete. On an
  // error it is removed here: fabtrain's error exit runs no destructors (app/error_exit.h).
  const fs::path staging = make_export_staging(o.out);
  std::vector<fs::path> files;
  try {
    save_pretrained(*model, staging);
    for (const auto& f : extra) write_file_atomically(staging / f.name, f.bytes);
    files = publish_export(staging, o.out);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(staging, ec);
    throw;
  }
  for (const auto& n : notes) std::cout << n << "\n";
  std::cout << "exported step " << g.manifest.value("step", Json()).dump() << " of " << o.checkpoint << " to " << o.out
            << " (" << files.size() << " files)" << std::endl;
  return 0;
}

}  // namespace

void register_export_command(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand("export", "gather a sharded checkpoint into HF safetensors + config.json");
  cmd->add_option("--checkpoint", opts->checkpoint, "OUTPUT/checkpoint-NNNNNNNN")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--out", opts->out, "directory for model.safetensors + config.json")->required();
  cmd->add_option("--model-dir", opts->model_dir,
                  "copy the tokenizer files from DIR (default: the model directory the checkpoint records)")
      ->check(CLI::ExistingDirectory);
  cmd->callback([opts, exit_code] { *exit_code = run_export(*opts); });
}

}  // namespace fabkit::trainer
