#include "fabric/allreduce/sweep.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

namespace fabkit::fabric {

float input_value(int rank, uint64_t index, size_t size_index) {
  // Mixing rank and index keeps every rank's data distinct and position dependent, so a swapped,
  // shifted or stale segment shows up as a mismatch.
  return static_cast<float>((index * 7 + static_cast<uint64_t>(rank) * 131 + size_index * 17) % 4093);
}

void fill_input(float* data, uint64_t count, int rank, size_t size_index) {
  for (uint64_t i = 0; i < count; ++i) data[i] = input_value(rank, i, size_index);
}

int64_t first_mismatch(const float* out, uint64_t count, int world_size, size_t size_index) {
  for (uint64_t i = 0; i < count; ++i) {
    float expected = 0;
    for (int r = 0; r < world_size; ++r) expected += input_value(r, i, size_index);
    if (out[i] != expected) return static_cast<int64_t>(i);
  }
  return -1;
}

int64_t first_mismatch_copy(const float* out, uint64_t count, int peer_rank, size_t size_index) {
  for (uint64_t i = 0; i < count; ++i)
    if (out[i] != input_value(peer_rank, i, size_index)) return static_cast<int64_t>(i);
  return -1;
}

std::vector<uint64_t> effective_sizes(const AllreduceSpec& spec) {
  std::vector<uint64_t> sizes = spec.sizes_bytes.empty() ? default_sizes_bytes() : spec.sizes_bytes;
  for (auto& b : sizes) b = b / sizeof(float) * sizeof(float);
  return sizes;
}

namespace {
struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using FloatBuf = std::unique_ptr<float, FreeDeleter>;
FloatBuf alloc_floats(uint64_t count) {
  // Page-aligned, whole pages: every buffer starts at the same offset in a page whatever its size.
  // With 64-byte alignment, small buffers (below malloc's mmap threshold) landed at arbitrary
  // offsets from each other on the heap, and 32 KiB all-reduces measured 0.65x the raw exchange
  // (9 rounds) against 0.89-0.99x page-aligned. Likely cause: the add loop's loads 4K-aliasing its
  // stores in flight (not confirmed: this VM exposes no hardware counters); page-aligned in, out
  // and bounce buffer (socket_allreduce.cc) keep equal offsets within a page.
  size_t bytes = ((count * sizeof(float) + 4095) / 4096) * 4096;
  FloatBuf buf(static_cast<float*>(std::aligned_alloc(4096, bytes == 0 ? 4096 : bytes)));
  if (!buf) throw std::bad_alloc();
  return buf;
}
}  // namespace

std::vector<SizeResult> run_sweep(const std::vector<uint64_t>& sizes, int rank,
                                  const SweepOptions& opt, const CollectiveFn& fn) {
  std::vector<SizeResult> results;
  uint64_t max_count = 0;
  for (uint64_t b : sizes) max_count = std::max<uint64_t>(max_count, b / sizeof(float));
  const bool own = opt.in_buffer == nullptr || opt.out_buffer == nullptr;
  FloatBuf in_owned = own ? alloc_floats(max_count) : nullptr;
  FloatBuf out_owned = own ? alloc_floats(max_count) : nullptr;
  float* in = own ? in_owned.get() : opt.in_buffer;
  float* out = own ? out_owned.get() : opt.out_buffer;
  for (size_t si = 0; si < sizes.size(); ++si) {
    uint64_t count = sizes[si] / sizeof(float);
    fill_input(in, count, rank, si);
    // NaN sentinel: an element the collective never wrote cannot pass the check by accident. Set
    // again after the warmup, so what is checked is what the timed calls wrote (a warmup call's
    // correct result must not cover for a timed call that skipped part of the output).
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::fill(out, out + count, nan);
    for (int i = 0; i < opt.warmup_iters; ++i) fn(in, out, count);
    if (opt.warmup_iters > 0) std::fill(out, out + count, nan);
    // Each call timed on its own as well (a clock read per call: nothing next to an all-reduce).
    double best_us = 0;
    auto t0 = std::chrono::steady_clock::now();
    auto prev = t0;
    for (int i = 0; i < opt.iters; ++i) {
      fn(in, out, count);
      auto now = std::chrono::steady_clock::now();
      double us = std::chrono::duration<double, std::micro>(now - prev).count();
      if (i == 0 || us < best_us) best_us = us;
      prev = now;
    }
    auto t1 = prev;
    SizeResult r;
    r.bytes = count * sizeof(float);
    r.time_us = std::chrono::duration<double, std::micro>(t1 - t0).count() / opt.iters;
    r.best_time_us = best_us;
    r.algbw_gbps = algbw_gbps(r.bytes, r.time_us);
    r.busbw_gbps = allreduce_busbw_gbps(r.algbw_gbps, opt.world_size);
    r.correct = (opt.copy_check ? first_mismatch_copy(out, count, opt.peer_rank, si)
                                : first_mismatch(out, count, opt.world_size, si)) < 0;
    results.push_back(r);
    if (opt.on_size_done) opt.on_size_done(si + 1, sizes.size());
  }
  return results;
}

}  // namespace fabkit::fabric
