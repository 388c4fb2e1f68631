// The size sweep every CPU runner shares: deterministic inputs, the timed loop, and the exact
// correctness check. Only the collective itself differs between fabkit, Gloo and the raw exchange.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "fabric/allreduce/allreduce_types.h"

namespace fabkit::fabric {

// Rank r's input element i for the size at `size_index`. Small integers (< 2^12), so any sum over
// up to 4096 ranks is an integer below 2^24 and exact in float32 whatever the summation order:
// the check compares bit for bit, no tolerance.
float input_value(int rank, uint64_t index, size_t size_index);
void fill_input(float* data, uint64_t count, int rank, size_t size_index);
// Index of the first wrong element, or -1 when every element equals the sum over all ranks.
int64_t first_mismatch(const float* out, uint64_t count, int world_size, size_t size_index);
// Raw exchange: out must equal the peer's input exactly.
int64_t first_mismatch_copy(const float* out, uint64_t count, int peer_rank, size_t size_index);

// Sizes as run: spec sizes (or the defaults) rounded down to whole float32 elements.
std::vector<uint64_t> effective_sizes(const AllreduceSpec&);

// One call = one collective of `count` floats from in to out. Throws PeerError on failure.
using CollectiveFn = std::function<void(const float* in, float* out, uint64_t count)>;

struct SweepOptions {
  bool copy_check = false;  // raw exchange: out == peer's input instead of the sum
  int peer_rank = 1;        // for copy_check
  int world_size = 2;
  int iters = 20;
  int warmup_iters = 5;
  std::function<void(size_t done, size_t total)> on_size_done;  // AllreduceSpec::on_size_done
  // Set both to run in the caller's memory (at least the largest size each, float aligned): a
  // transport that registers its memory once (the ibverbs ring) hands its registered input and
  // output here. Null: the sweep allocates its own.
  float* in_buffer = nullptr;
  float* out_buffer = nullptr;
};

// Runs warmup + timed iterations per size and checks the last result. Throws what `fn` throws.
std::vector<SizeResult> run_sweep(const std::vector<uint64_t>& sizes, int rank,
                                  const SweepOptions& opt, const CollectiveFn& fn);

}  // namespace fabkit::fabric
