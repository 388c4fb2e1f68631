// Sharded data parallel (FSDP-style): every rank holds a slice of every unit of the whole model
// (parallel/sharded_model.h) and reads its own slice of each step's batch; --grad-accum
// micro-batches a step. The engine of `fabtrain train` at --pp 1 (step_engine.h).
#pragma once

#include <memory>

#include "trainer/app/step_engine.h"
#include "trainer/app/train_log.h"

namespace fabkit::trainer {

// Refuses memory flags that cannot combine (UsageError naming the flag that fixes it).
void check_memory_options(const TrainOptions& o);

std::unique_ptr<StepEngine> make_sharded_engine(const TrainOptions& o, EngineInputs& in,
                                                TrainLog& log);

}  // namespace fabkit::trainer
