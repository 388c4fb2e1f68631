// Checkpoints of a pipeline run: checkpoint.h's layout per stage, one directory per stage,
// OUTPUT/pipeline-stage-<s>-of-<S>/checkpoint-<step>/ (rank-<r>-of-<D>.bin per replica of the
// stage, and the stage's manifest). Each stage's replicas save and resume over the stage's
// communicator, so a change of the data-parallel degree D reshards as for --pp 1; a change of S
// (or from or to --pp 1) is refused with the directory that holds the other run's checkpoints.
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

// Collective over the world: every stage resumes its newest loadable checkpoint over its stage
// comm, then the stages must agree on the step (a save interrupted between stages leaves them
// apart: UsageError naming each stage's step and the directory to remove).
std::optional<TrainState> resume_pipeline(Comm& world, Comm& stage_comm,
                                          const std::filesystem::path& output_dir, int stage,
                                          int stages, std::vector<FlatShard>& shards,
                                          ShardOptimizer& optimizer,
                                          std::vector<std::string>* warnings);

}  // namespace fabkit::trainer
