// The ring all-reduce as a list of pipeline ops (pure, unit-tested on its own).
//
// Reduce-scatter then all-gather over n segments, 2(n-1) steps; at step s a rank sends one segment
// to its right neighbour and receives one from its left. For 2 ranks this is "send the half the
// peer owns, reduce the half I own, send my reduced half back". Chosen over the other 2-rank
// option (each sends its whole buffer and both reduce all of it) by counting the work, since both
// put the same N bytes per direction on the wire: the halves do half the additions and half the
// reduction's memory traffic (read input, write output), and the all-gather half is received
// straight into the output with no arithmetic. On 2 shared cores the CPU time is the cost that
// shows (bench/allreduce: user+sys per rank), and the reduction is the only thing an all-reduce
// adds to the raw exchange.
#pragma once

#include <cstdint>
#include <vector>

#include "fabric/allreduce/pipeline.h"

namespace fabkit::fabric {

struct Segment {
  uint64_t first = 0;  // element index
  uint64_t count = 0;
};

// n segments as even as possible (the first count % n get one more element).
std::vector<Segment> ring_segments(uint64_t count, int world_size);

struct RingOps {
  std::vector<SendOp> sends;
  std::vector<RecvOp> recvs;
};

// Out-of-place: `in` is never written, `out` receives the sum.
RingOps ring_allreduce_ops(const float* in, float* out, uint64_t count, int rank, int world_size);

// Two ranks, up to this many bytes: each sends its whole buffer and adds the peer's as it arrives
// (one phase, the raw exchange's exact data movement plus an overlapped add). Measured between
// two namespace hosts on the 2-core machine (bench/allreduce/run_bench.sh, 5 rounds, median of
// fabkit/raw per round): at 1 MiB the halves reached 0.77 and 0.92 in two runs, the full exchange
// 1.18; at 8 MiB 0.88 vs 0.95; from 64 MiB the halves win (0.97 vs 0.92 at 64 MiB, 1.03 vs 0.89
// at 256 MiB), where the second phase is amortised and the full exchange's doubled additions
// compete for the one core each rank has. The two ranks add the same two floats (a + b = b + a in
// IEEE 754), so both hold the identical sum.
inline constexpr uint64_t kTwoRankFullExchangeMaxBytes = 16ull << 20;

// What fabkit-socket runs: the full exchange for 2 ranks up to kTwoRankFullExchangeMaxBytes,
// the ring otherwise.
RingOps allreduce_ops(const float* in, float* out, uint64_t count, int rank, int world_size);


}  // namespace fabkit::fabric
