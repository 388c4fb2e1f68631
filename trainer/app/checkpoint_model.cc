#include "trainer/app/checkpoint_model.h"

#include <sys/stat.h>
#include <torch/torch.h>

#include <map>
#include <optional>
#include <regex>

#include "common/errors.h"
#include "common/regular_file.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/model/pretrained.h"

namespace fs = std::filesystem;

namespace fabkit::trainer {
namespace {

// "pipeline-stage-<s>-of-<S>" -> {s, S}; nullopt for any other name (or numbers out of range).
std::optional<std::pair<int, int>> pipeline_stage_of(const std::string& name) {
  std::smatch m;
  if (!std::regex_match(name, m, std::regex(R"(pipeline-stage-(\d{1,6})-of-(\d{1,6}))")))
    return std::nullopt;
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
    const std::string rel = "pipeline-stage-" + std::to_string(s) + "-of-" +
                            std::to_string(stages) + "/" + dir.filename().string();
    GatheredCheckpoint more;
    try {
      const UniqueFd other = open_directory_beneath(run_fd.get(), rel, (run_dir / rel).string());
      more = gather_checkpoint(other.get(), run_dir / rel);
    } catch (const UsageError& e) {
      throw UsageError(checkpoint.string() + " is stage " + std::to_string(own) + " of a " +
                       std::to_string(stages) + "-stage pipeline run, but " +
                       (run_dir / rel).string() + " (the same step of stage " + std::to_string(s) +
                       ") is missing or incomplete: " + e.what());
    }
    for (auto& p : more.params) g.params.push_back(std::move(p));
  }
  return g;
}

}  // namespace

std::string recorded_model_dir(const Json& manifest, const std::string& manifest_path,
                               std::string& why) {
  const Json* recorded = manifest.contains("model_dir") ? &manifest.at("model_dir") : nullptr;
  if (recorded && !recorded->is_string())
    throw UsageError(manifest_path + ": field \"model_dir\" must be a directory name, found " +
                     recorded->dump().substr(0, 200));
  const std::string dir = recorded ? recorded->get<std::string>() : "";
  std::error_code ec;
  if (dir.empty())
    why = "the checkpoint records no model directory";
  else if (fs::path(dir).is_relative())
    why = "the checkpoint's model_dir \"" + dir +
          "\" is relative to the training run's working directory";
  else if (!fs::is_directory(dir, ec))
    why = "the checkpoint's model_dir " + dir + " is not a directory here";
  return why.empty() ? dir : "";
}

bool is_fabtrain_checkpoint(const fs::path& dir) {
  struct stat st {};
  return ::stat((dir / "manifest.json").c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

CheckpointModel load_checkpoint_model(const fs::path& checkpoint) {
  GatheredCheckpoint g = gather_all_stages(checkpoint);
  CheckpointModel c;
  c.manifest_path = (checkpoint / "manifest.json").string();
  const std::string& mpath = c.manifest_path;
  if (!g.manifest.contains("model_config"))
    throw UsageError(mpath + ": field \"model_config\" is missing");
  LlamaConfig config = parse_llama_config(g.manifest.at("model_config"), mpath + " (model_config)");
  check_model_fits_memory(config, physical_memory_bytes(), checkpoint.string() + " (model_config)");
  c.model = LlamaModel(config, torch::kFloat32, 0);
  std::map<std::string, const FullTensor*> by_name;
  for (const auto& [name, t] : g.params) by_name[name] = &t;
  torch::NoGradGuard no_grad;
  for (auto& [name, p] : c.model->hf_named_parameters()) {
    auto it = by_name.find(name);
    if (it == by_name.end())
      throw UsageError(checkpoint.string() + ": the checkpoint has no tensor " + name);
    if (it->second->shape != p.sizes().vec())
      throw UsageError(checkpoint.string() + ": tensor " + name +
                       " has another shape than its model_config says");
    p.copy_(torch::from_blob(const_cast<float*>(it->second->values.data()), p.sizes(),
                             torch::kFloat32));
  }
  c.manifest = std::move(g.manifest);
  return c;
}

}  // namespace fabkit::trainer
