#include "trainer/app/pipeline_checkpoint.h"

#include <regex>

#include "common/errors.h"

namespace fs = std::filesystem;

namespace fabkit::trainer {

fs::path pipeline_stage_dir(const fs::path& output_dir, int stage, int stages) {
  return output_dir / ("pipeline-stage-" + std::to_string(stage) + "-of-" + std::to_string(stages));
}

void refuse_other_pipeline_degree(const fs::path& output_dir, int stages) {
  if (!fs::is_directory(output_dir)) return;
  auto refuse = [&](const fs::path& where, int other) {
    throw UsageError(where.string() + " holds checkpoints of a run with --pp " +
                     std::to_string(other) + "; resuming them with --pp " + std::to_string(stages) +
                     " is not supported (stage checkpoints do not reshard across pipeline "
                     "degrees): resume with --pp " +
                     std::to_string(other) +
                     ", or start fresh with --no-resume or another --output");
  };
  if (stages != 1 && !list_checkpoints(output_dir).empty()) refuse(output_dir, 1);
  const std::regex name(R"(pipeline-stage-(\d+)-of-(\d+))");
  for (const auto& e : fs::directory_iterator(output_dir)) {
    std::smatch m;
    const std::string n = e.path().filename().string();
    if (!e.is_directory() || !std::regex_match(n, m, name)) continue;
    const int other = std::stoi(m[2].str());
    if (other != stages && !list_checkpoints(e.path()).empty()) refuse(e.path(), other);
  }
}

std::optional<TrainState> resume_pipeline(Comm& world, Comm& stage_comm, const fs::path& output_dir,
                                          int stage, int stages, std::vector<FlatShard>& shards,
                                          ShardOptimizer& optimizer,
                                          std::vector<std::string>* warnings) {
  std::optional<TrainState> st = resume_latest(
      stage_comm, pipeline_stage_dir(output_dir, stage, stages), shards, optimizer, warnings);
  // Steps travel as int64 bytes (checkpoint.h: never as floats); -1 = nothing to resume.
  const int64_t mine = st ? st->step : -1;
  std::vector<int64_t> all(static_cast<size_t>(world.world_size()));
  world.allgather_bytes(&mine, sizeof(mine), all.data());
  const int replicas = world.world_size() / stages;
  bool same = true;
  for (int64_t s : all) same = same && s == all[0];
  if (same) return st;
  std::string steps;
  int64_t newest = -1;
  int newest_stage = 0;
  for (int s = 0; s < stages; ++s) {
    const int64_t v = all[static_cast<size_t>(s * replicas)];
    steps += (s ? ", " : "") + ("stage " + std::to_string(s) + ": ") +
             (v < 0 ? "none" : "step " + std::to_string(v));
    if (v > newest) {
      newest = v;
      newest_stage = s;
    }
  }
  char name[32];
  std::snprintf(name, sizeof(name), "checkpoint-%08lld", static_cast<long long>(newest));
  throw UsageError("the pipeline stages' newest loadable checkpoints disagree (" + steps +
                   "; a save was interrupted between stages, or a stage's checkpoint was removed "
                   "or does not match "
                   "this run's --stage-layers): remove " +
                   (pipeline_stage_dir(output_dir, newest_stage, stages) / name).string() +
                   " to resume from the older step, or start fresh with --no-resume");
}

}  // namespace fabkit::trainer
