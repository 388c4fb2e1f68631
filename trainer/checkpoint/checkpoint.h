// Sharded checkpoints: OUT/checkpoint-<step>/ holds one shard file per rank
// (rank-<r>-of-<n>.bin: this rank's params + optimizer state) and a manifest.json, written last
// (temp file, fsync, rename, fsync of the directory) once every shard is durable and every rank's
// size and SHA-256 are gathered over the comm. A checkpoint exists only once its manifest is in
// place; resume verifies sizes and SHA-256 of the shards and skips (with a warning) anything
// incomplete or corrupt.
//
// Where it is written: on a file system every rank sees (rank 0 writes the manifest), or with
// save_on_each_node on each node's local disk (the first local rank of every node writes the same
// manifest beside that node's shards; each rank resumes from its own node's copy).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "trainer/distributed/comm.h"
#include "trainer/optim/optimizer.h"
#include "trainer/parallel/flat_shard.h"

namespace fabkit::trainer {

inline constexpr const char* kCheckpointFormat = "fabtrain-checkpoint-1";

struct TrainState {
  int64_t step = 0;            // optimizer steps completed
  int64_t epoch = 0;
  int64_t batch_in_epoch = 0;  // micro-batches per rank consumed in `epoch` (the data position)
  // The same position in examples of the epoch's order (all ranks): a resume with another world
  // size or micro-batch size continues from here. -1: not recorded (older checkpoints).
  int64_t examples_in_epoch = -1;
  uint64_t seed = 0;
  // fp16's dynamic loss scale (0: not used) and its count of good steps.
  double loss_scale = 0.0;
  int64_t loss_scale_good_steps = 0;
};

struct SaveRequest {
  std::filesystem::path output_dir;
  TrainState state;
  Json model_config;           // HF config.json, stored in the checkpoint for export
  std::string model_dir;       // where tokenizer files can be copied from on export
  int save_total_limit = 0;    // > 0: keep only the newest N complete checkpoints
  // Each node writes to its own local disk (output_dir is node-local): every node's local rank 0
  // writes the manifest there. Otherwise output_dir is shared and rank 0 writes it.
  bool save_on_each_node = false;
  int local_rank = 0;
};

// Collective: every rank calls it. Returns the checkpoint directory. Warnings (pruning) go to
// *warnings on rank 0.
std::filesystem::path save_checkpoint(Comm& comm, const SaveRequest& req,
                                      const std::vector<FlatShard>& shards,
                                      const ShardOptimizer& optimizer,
                                      std::vector<std::string>* warnings);

// Complete checkpoints under output_dir (manifest present), newest first.
std::vector<std::filesystem::path> list_checkpoints(const std::filesystem::path& output_dir);

// Collective: finds the newest checkpoint every rank can load (manifest parses, same layout, the
// shards it needs have the recorded size and hash), loads this rank's slice into
// shards/optimizer, returns its train state. A checkpoint written by another world size is
// resharded: every rank reads all its shards and re-cuts params and optimizer state (a warning
// says so). Skipped ones are described in *warnings.
std::optional<TrainState> resume_latest(Comm& comm, const std::filesystem::path& output_dir,
                                        std::vector<FlatShard>& shards, ShardOptimizer& optimizer,
                                        std::vector<std::string>* warnings);

// Checkpoint steps travel between ranks as int64 bytes, never as floats (exact past 2^24).
// Exposed for the round-trip test.
void broadcast_steps(Comm& comm, std::vector<int64_t>& steps, int root);

// Offline (one process): the full parameters of a checkpoint by HF name, shards verified.
struct FullTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};
struct GatheredCheckpoint {
  Json manifest;
  std::vector<std::pair<std::string, FullTensor>> params;  // in manifest order
};
// Every shard is opened beneath checkpoint_dir (the manifest's file names may not lead out of it),
// checked against its recorded size and SHA-256, and every parameter's offset and shape against
// the elements the shards hold: a manifest or shard that says otherwise is a UsageError naming
// the file and field.
GatheredCheckpoint gather_checkpoint(const std::filesystem::path& checkpoint_dir);
// The same for a directory already open (dir_fd); checkpoint_dir names it in messages.
GatheredCheckpoint gather_checkpoint(int dir_fd, const std::filesystem::path& checkpoint_dir);

std::string sha256_file(const std::filesystem::path& path);  // lowercase hex
std::string sha256_fd(int fd, const std::string& shown);      // of an open file, from offset 0

}  // namespace fabkit::trainer
