// One sharding unit (a decoder layer, or the embedding/norm/head group) as this rank holds it:
// the unit's parameters concatenated in a fixed order into one flat fp32 vector, padded to a
// multiple of the world size, of which this rank keeps slice [rank * shard_numel, +shard_numel).
// Plain C++ (no torch): optim/ and checkpoint/ work on these directly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fabkit::trainer {

struct ParamSlot {
  std::string name;              // HF name: "model.layers.0.self_attn.q_proj.weight"
  std::vector<int64_t> shape;
  int64_t offset = 0;            // into the unit's (unpadded) flat vector
  int64_t numel = 0;
};

struct FlatShard {
  std::string unit;              // "embed+head", "layers.3"
  std::vector<ParamSlot> params;
  int64_t total_numel = 0;       // sum of params' numel (unpadded)
  int64_t shard_numel = 0;       // ceil(total / world)
  int rank = 0;
  int world_size = 1;
  std::vector<float> param;      // shard_numel values; the padding tail stays 0
  std::vector<float> grad;       // accumulated gradient for the same slice

  int64_t begin() const { return static_cast<int64_t>(rank) * shard_numel; }
  // Number of real (non-padding) elements in this rank's slice.
  int64_t valid_numel() const;
};

// Lays out params (in the given order) for `world_size` ranks; param/grad sized, zero.
FlatShard make_flat_shard(std::string unit, std::vector<ParamSlot> params, int rank, int world_size);

// Resharding (a checkpoint written by another world size): the old ranks' slices of one
// per-element array, in rank order, concatenated are the unit's padded flat vector, whatever the
// old world size was; returns this shard's slice of it (shard_numel values, 0 past the end).
std::vector<float> reslice(const std::vector<const std::vector<float>*>& old_slices, const FlatShard& shard);

// Bytes this rank holds for params + grads (optimizer state is counted by the optimizer).
int64_t shard_state_bytes(const std::vector<FlatShard>& shards);

}  // namespace fabkit::trainer
