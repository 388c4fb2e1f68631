// A fabtrain checkpoint (OUTPUT/checkpoint-NNNNNNNN, or one stage's of a pipeline run) gathered
// into one whole LlamaModel in memory: what `fabtrain export` writes out as HF safetensors, and
// what `fabtrain serve --model CHECKPOINT` serves without that step.
//
// The checkpoint may be another user's (root exports what a job wrote): every shard is opened
// beneath the checkpoint directory and every offset and size checked against the bytes there
// (checkpoint/checkpoint.h); a pipeline stage's directory brings in the same step of every
// other stage, opened beneath the run's directory.
#pragma once

#include <filesystem>
#include <string>

#include "common/json.h"
#include "trainer/model/llama.h"

namespace fabkit::trainer {

struct CheckpointModel {
  LlamaModel model{nullptr};  // fp32, on the CPU, every parameter from the checkpoint
  Json manifest;
  std::string manifest_path;  // for messages naming the manifest's fields
};

// True when `dir` holds a fabtrain checkpoint's manifest.json (not an HF model folder).
bool is_fabtrain_checkpoint(const std::filesystem::path& dir);

// The model directory the checkpoint's training run recorded (its --model, absolute: where its
// tokenizer files are), or "" with `why` set when it cannot be used here (none recorded, a
// relative path, not a directory on this machine). A model_dir that is not a string is a
// UsageError naming manifest_path's field.
std::string recorded_model_dir(const Json& manifest, const std::string& manifest_path,
                               std::string& why);

// UsageError naming the file or tensor when the checkpoint is incomplete, inconsistent with its
// model_config, or too large for this machine's memory.
CheckpointModel load_checkpoint_model(const std::filesystem::path& checkpoint);

}  // namespace fabkit::trainer
