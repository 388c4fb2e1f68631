// Checkpoints of a pipeline run: checkpoint.h's layout per virtual stage, one directory per
// stage, OUTPUT/pipeline-stage-<s>-of-<S>/checkpoint-<step>/ (rank-<r>-of-<D>.bin per replica of
// the stage, and the stage's manifest); S counts virtual stages (--pp x --virtual-stages). Each
// stage's replicas save and resume over the stage's communicator, so a change of the data-parallel
// degree D reshards as for --pp 1; a change of S (or from or to --pp 1) is refused with the
// directory that holds the other run's checkpoints.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "trainer/checkpoint/checkpoint.h"
#include "trainer/distributed/comm.h"

namespace fabkit::trainer {

std::filesystem::path pipeline_stage_dir(const std::filesystem::path& output_dir, int stage,
                                         int stages);

// UsageError when output_dir holds complete checkpoints of another pipeline degree than `stages`
// (1: checkpoint-* directly in output_dir).
void refuse_other_pipeline_degree(const std::filesystem::path& output_dir, int stages);

// The units one virtual stage holds: [first, first + count) of the rank's shards (an interleaved
// schedule's rank holds several, one per model chunk; the others one, all its units).
struct StageUnits {
  int stage = 0;  // the virtual stage: its directory pipeline-stage-<stage>-of-<stages>
  size_t first = 0, count = 0;
};

// Collective over the stage comm: each of this rank's virtual stages saved as a checkpoint of its
// own, in its own stage directory (so a run with another schedule over the same virtual stages,
// e.g. --pp 4 1f1b after --pp 2 --virtual-stages 2, finds the same layout). Returns the first
// directory.
std::filesystem::path save_pipeline_stages(Comm& stage_comm, const SaveRequest& req, int stages,
                                           const std::vector<StageUnits>& mine,
                                           std::vector<FlatShard>& shards,
                                           ShardOptimizer& optimizer,
                                           std::vector<std::string>* warnings);

// Collective over the world: every virtual stage resumes its newest loadable checkpoint over its
// stage comm, then all stages must agree on the step (a save interrupted between stages leaves
// them apart: UsageError naming each stage's step and the directory to remove).
std::optional<TrainState> resume_pipeline(Comm& world, Comm& stage_comm,
                                          const std::filesystem::path& output_dir, int stages,
                                          const std::vector<StageUnits>& mine,
                                          std::vector<FlatShard>& shards, ShardOptimizer& optimizer,
                                          std::vector<std::string>* warnings);

}  // namespace fabkit::trainer
