// fabtrain's one training loop, over either step engine (step_engine.h): the epochs and the data
// position, loss scaling, clipping and the optimizer step, logging, evaluation, save/resume and
// control, written once for every parallelism.
#pragma once

#include <string>

#include "trainer/app/step_engine.h"
#include "trainer/app/train_log.h"
#include "trainer/app/train_options.h"
#include "trainer/data/dataset.h"

namespace fabkit::trainer {

// What the loop needs besides the engine: the data, and the facts a checkpoint records.
struct LoopInputs {
  const LoadedData& data;
  Json model_config;  // HF config.json, stored in every checkpoint for export
  int local_rank = 0;
};

// Trains to the end, a stop or an abort; returns the exit code.
int run_train_loop(const TrainOptions& o, StepEngine& engine, const LoopInputs& in, TrainLog& log);

}  // namespace fabkit::trainer
