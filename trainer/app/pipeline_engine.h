// Pipeline stages (`fabtrain train --pp S`, docs/fabtrain.md "Pipeline parallel"): the decoder's
// layers split over S stages, each stage's units sharded over its D data-parallel replicas, the
// micro-batches of a step run through the stages on a GPipe or 1F1B schedule
// (parallel/pipeline_runner.h). The engine of `fabtrain train` at --pp > 1 (step_engine.h).
//
// Ranks: world = S stages x D data-parallel replicas, stage-major: rank = stage * D + replica, so
// a stage's replicas are neighbours (on one node when D divides the ranks per node): their
// gradient reduce-scatters stay on the fast local links, and only activations (small) cross the
// slower links between nodes.
#pragma once

#include <memory>

#include "trainer/app/step_engine.h"
#include "trainer/app/train_log.h"
#include "trainer/app/train_options.h"
#include "trainer/parallel/pipeline_schedule.h"

namespace fabkit::trainer {

// Flags that do not combine with the pipeline, and checkpoints of another pipeline degree in
// --output: UsageError naming the value and the fix. Called for every run (also --pp 1), before
// the communicator exists.
void validate_pipeline_flags(const TrainOptions& o);

// The schedule's shape from the flags: P = --pp, M = --micro-batches (default 4 x P), V =
// --virtual-stages (default 2 with interleaved-1f1b, else 1).
PipeShape pipeline_shape(const TrainOptions& o);

// --dry-run: the schedule every rank would run, validated, as a unit-cost timeline on stdout (and
// --timeline-html FILE), with the bubble and the activations each rank holds. Nothing is loaded
// or launched. Returns the exit code.
int print_pipeline_dry_run(const TrainOptions& o);
// What --dry-run prints (and a pipeline run writes to TensorBoard as text): the schedule checked,
// its unit-cost timeline, bubble and activations held per rank. UsageError if invalid.
std::string pipeline_schedule_report(PipeSchedule kind, const PipeShape& shape);

std::unique_ptr<StepEngine> make_pipeline_engine(const TrainOptions& o, EngineInputs& in,
                                                 TrainLog& log);

}  // namespace fabkit::trainer
