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


}  // namespace fabkit::fabric
