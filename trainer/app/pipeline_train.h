// `fabtrain train --pp S`: the run after the model and data are loaded, when the decoder is split
// over S pipeline stages (docs/fabtrain.md, "Pipeline parallel"). train_command.cc dispatches
// here; launch, fabric, device and the world communicator are already set up by then.
//
// Ranks: world = S stages x D data-parallel replicas, stage-major: rank = stage * D + replica, so
// a stage's replicas are neighbours (on one node when D divides the ranks per node): their
// gradient reduce-scatters stay on the fast local links, and only activations (small) cross the
// slower links between nodes.
#pragma once

#include <optional>
#include <string>

#include "trainer/app/device_setup.h"
#include "trainer/app/nccl_transport.h"
#include "trainer/app/train_log.h"
#include "trainer/app/train_options.h"
#include "trainer/data/dataset.h"
#include "trainer/distributed/comm.h"
#include "trainer/distributed/launch_env.h"
#include "trainer/model/pretrained.h"

namespace fabkit::trainer {

// Flags that do not combine with the pipeline, and checkpoints of another pipeline degree in
// --output: UsageError naming the value and the fix. Called for every run (also --pp 1), before
// the communicator exists.
void validate_pipeline_flags(const TrainOptions& o);

struct PipelineRunInputs {
  const LaunchEnv& launch;
  const CommOptions& comm_options;  // the world's, for the stage communicators
  Comm& world;
  TrainDevice device;
  bool tensor_step = false;
  LoadedModel loaded;
  LoadedData data;
  NcclLogPlan nccl_log;
  std::optional<std::string> required_transport;
};

// The exit code.
int run_pipeline_train(const TrainOptions& o, PipelineRunInputs in, TrainLog& log);

}  // namespace fabkit::trainer
