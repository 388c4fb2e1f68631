#include "trainer/parallel/flat_shard.h"

#include <algorithm>

#include "common/errors.h"

namespace fabkit::trainer {

int64_t FlatShard::valid_numel() const {
  return std::clamp<int64_t>(total_numel - begin(), 0, shard_numel);
}

FlatShard make_flat_shard(std::string unit, std::vector<ParamSlot> params, int rank, int world_size) {
  FABKIT_ENFORCE(world_size >= 1 && rank >= 0 && rank < world_size, "bad rank/world for sharding");
  FlatShard s;
  s.unit = std::move(unit);
  int64_t offset = 0;
  for (auto& p : params) {
    p.numel = 1;
    for (int64_t d : p.shape) p.numel *= d;
    p.offset = offset;
    offset += p.numel;
  }
  s.params = std::move(params);
  s.total_numel = offset;
  s.shard_numel = (offset + world_size - 1) / world_size;
  s.rank = rank;
  s.world_size = world_size;
  s.param.assign(s.shard_numel, 0.0f);
  s.grad.assign(s.shard_numel, 0.0f);
  return s;
}

std::vector<float> reslice(const std::vector<const std::vector<float>*>& old_slices, const FlatShard& shard) {
  std::vector<float> out(static_cast<size_t>(shard.shard_numel), 0.0f);
  const int64_t begin = shard.begin();
  const int64_t end = begin + shard.valid_numel();  // padding stays 0
  int64_t at = 0;  // flat position of the current old slice's first value
  for (const auto* slice : old_slices) {
    const int64_t n = static_cast<int64_t>(slice->size());
    const int64_t lo = std::max(at, begin), hi = std::min(at + n, end);
    for (int64_t i = lo; i < hi; ++i) out[static_cast<size_t>(i - begin)] = (*slice)[static_cast<size_t>(i - at)];
    at += n;
  }
  FABKIT_ENFORCE(at >= end, "reslice: the old slices cover " + std::to_string(at) + " values, the unit needs " +
                                std::to_string(end));
  return out;
}

int64_t shard_state_bytes(const std::vector<FlatShard>& shards) {
  int64_t bytes = 0;
  for (const auto& s : shards) bytes += static_cast<int64_t>((s.param.size() + s.grad.size()) * sizeof(float));
  return bytes;
}

}  // namespace fabkit::trainer
