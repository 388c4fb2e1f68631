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
    throw UsageError(
        where.string() + " holds checkpoints of a run with " + std::to_string(other) +
        " pipeline stages (--pp x --virtual-stages); resuming them with " + std::to_string(stages) +
        " stages is not supported (stage checkpoints do not reshard across pipeline "
        "degrees): resume with --pp " +
        std::to_string(other) + " (or --pp P --virtual-stages V, P x V = " + std::to_string(other) +
        ", with interleaved-1f1b), or start fresh with --no-resume or another --output");
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

namespace {

// One virtual stage's units of the rank's optimizer, as an optimizer of their own for
// checkpoint.h (which numbers units from 0): unit u here is unit first + u there. Only the state
// calls are used; stepping goes through the whole optimizer.
class UnitRangeOptimizer : public ShardOptimizer {
 public:
  UnitRangeOptimizer(ShardOptimizer& inner, size_t first) : inner_(inner), first_(first) {
    set_steps(inner.steps());
  }
  std::string name() const override { return inner_.name(); }
  void step(std::vector<FlatShard>&, double) override {
    FABKIT_ENFORCE(false, "a stage's checkpoint view does not step");
  }
  void step_unit(std::vector<FlatShard>&, size_t, const float*, double) override {
    FABKIT_ENFORCE(false, "a stage's checkpoint view does not step");
  }
  int64_t state_bytes() const override { return inner_.state_bytes(); }
  std::vector<NamedArray> state(size_t unit) const override { return inner_.state(first_ + unit); }
  void load_state(size_t unit, const std::vector<NamedArray>& arrays) override {
    inner_.load_state(first_ + unit, arrays);
  }
  std::vector<NamedArray> reshard_state(
      const FlatShard& shard,
      const std::vector<std::vector<NamedArray>>& old_ranks) const override {
    return inner_.reshard_state(shard, old_ranks);
  }

 private:
  ShardOptimizer& inner_;
  size_t first_;
};

// The stage's shards moved out of the rank's vector for a checkpoint call, and back after it
// (checkpoint.h takes a whole vector; a resume may replace the shards' buffers).
class BorrowedShards {
 public:
  BorrowedShards(std::vector<FlatShard>& all, const StageUnits& u) : all_(all), u_(u) {
    FABKIT_ENFORCE(u.first + u.count <= all.size(), "a stage names units the rank does not hold");
    for (size_t i = 0; i < u.count; ++i) part_.push_back(std::move(all[u.first + i]));
  }
  ~BorrowedShards() {
    for (size_t i = 0; i < u_.count; ++i) all_[u_.first + i] = std::move(part_[i]);
  }
  std::vector<FlatShard>& get() { return part_; }

 private:
  std::vector<FlatShard>& all_;
  StageUnits u_;
  std::vector<FlatShard> part_;
};

}  // namespace

fs::path save_pipeline_stages(Comm& stage_comm, const SaveRequest& req, int stages,
                              const std::vector<StageUnits>& mine, std::vector<FlatShard>& shards,
                              ShardOptimizer& optimizer, std::vector<std::string>* warnings) {
  fs::path first;
  for (const StageUnits& u : mine) {
    SaveRequest r = req;
    r.output_dir = pipeline_stage_dir(req.output_dir, u.stage, stages);
    BorrowedShards part(shards, u);
    UnitRangeOptimizer view(optimizer, u.first);
    const fs::path dir = save_checkpoint(stage_comm, r, part.get(), view, warnings);
    if (first.empty()) first = dir;
  }
  return first;
}

std::optional<TrainState> resume_pipeline(Comm& world, Comm& stage_comm, const fs::path& output_dir,
                                          int stages, const std::vector<StageUnits>& mine,
                                          std::vector<FlatShard>& shards, ShardOptimizer& optimizer,
                                          std::vector<std::string>* warnings) {
  std::optional<TrainState> st;
  // Steps travel as int64 bytes (checkpoint.h: never as floats); -1 = nothing to resume. Every
  // rank holds the same number of virtual stages, so the gather is uniform.
  std::vector<int64_t> steps;
  for (const StageUnits& u : mine) {
    BorrowedShards part(shards, u);
    UnitRangeOptimizer view(optimizer, u.first);
    std::optional<TrainState> one = resume_latest(
        stage_comm, pipeline_stage_dir(output_dir, u.stage, stages), part.get(), view, warnings);
    steps.push_back(one ? one->step : -1);
    if (one) {
      optimizer.set_steps(view.steps());
      if (!st) st = one;
    }
  }
  const size_t per_rank = mine.size();
  std::vector<int64_t> all(per_rank * static_cast<size_t>(world.world_size()));
  world.allgather_bytes(steps.data(), per_rank * sizeof(int64_t), all.data());
  bool same = true;
  for (int64_t s : all) same = same && s == all[0];
  if (same) return st;
  // Each virtual stage's step, from the first replica of the rank that holds it.
  const int replicas = world.world_size() / (stages / static_cast<int>(per_rank));
  const int ranks = stages / static_cast<int>(per_rank);
  std::vector<int64_t> by_stage(static_cast<size_t>(stages), -1);
  for (int r = 0; r < ranks; ++r) {
    for (size_t c = 0; c < per_rank; ++c) {
      by_stage[c * static_cast<size_t>(ranks) + static_cast<size_t>(r)] =
          all[static_cast<size_t>(r * replicas) * per_rank + c];
    }
  }
  std::string text;
  int64_t newest = -1;
  int newest_stage = 0;
  for (int s = 0; s < stages; ++s) {
    const int64_t v = by_stage[static_cast<size_t>(s)];
    text += (s ? ", " : "") + ("stage " + std::to_string(s) + ": ") +
            (v < 0 ? "none" : "step " + std::to_string(v));
    if (v > newest) {
      newest = v;
      newest_stage = s;
    }
  }
  char name[32];
  std::snprintf(name, sizeof(name), "checkpoint-%08lld", static_cast<long long>(newest));
  throw UsageError("the pipeline stages' newest loadable checkpoints disagree (" + text +
                   "; a save was interrupted between stages, or a stage's checkpoint was removed "
                   "or does not match "
                   "this run's --stage-layers): remove " +
                   (pipeline_stage_dir(output_dir, newest_stage, stages) / name).string() +
                   " to resume from the older step, or start fresh with --no-resume");
}

}  // namespace fabkit::trainer
