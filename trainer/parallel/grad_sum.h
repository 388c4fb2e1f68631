// The gradient shard's element-wise passes on the host, with the squared norm taken on the way:
// a world of one rank writes each parameter's gradient into its shard slot itself, and the clip
// needs the sum of squares of what was written. One pass reads and writes each float once; the
// separate zero, add and norm passes it replaces read the shard three times and wrote it twice
// (about 5 ms of a 145 ms CPU bench step, docs/fabtrain.md "Benchmark").
// Plain C++ (no torch), as the shards are.
#pragma once

#include <cstdint>

namespace fabkit::trainer {

// dst[i] = src[i] (overwrite) or dst[i] += src[i]; returns the sum of dst's new values squared,
// accumulated in double in a fixed lane order (deterministic, the same on every CPU clone).
double store_grad_sum_squares(float* dst, const float* src, int64_t n, bool overwrite);

// The sum of x's values squared, in the same lane order.
double sum_squares(const float* x, int64_t n);

}  // namespace fabkit::trainer
