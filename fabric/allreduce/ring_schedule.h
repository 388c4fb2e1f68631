// The ring all-reduce as a list of send/receive ops for the engine in send_recv_engine.h (pure,
// unit-tested on its own).
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

#include "fabric/allreduce/send_recv_engine.h"

namespace fabkit::fabric {

struct Segment {
  uint64_t first = 0;  // element index
  uint64_t count = 0;
};

// n segments as even as possible (the first count % n get one more element).
std::vector<Segment> ring_segments(uint64_t count, int world_size);

// One step of the ring, without pointers (the socket engine and the RDMA ring, rdma_ring_plan.h,
// both build on it). The send of step s >= 1 forwards what the receive of step s-1 produced (the
// same segment), so it waits for it; a rank's send of step s is its right neighbour's receive of
// step s (the same segment: ring_segments is the same on every rank).
struct RingStep {
  Segment send;             // to the right neighbour
  bool send_input = false;  // step 0 sends the raw input, later steps the output (partial/full sum)
  Segment recv;             // from the left neighbour
  bool recv_reduce = false;  // reduce-scatter: output = received + input; all-gather: copied as is
};

// Reduce-scatter then all-gather: 2(n-1) steps.
std::vector<RingStep> ring_steps(uint64_t count, int rank, int world_size);

struct RingOps {
  std::vector<SendOp> sends;
  std::vector<RecvOp> recvs;
};

// Out-of-place: `in` is never written, `out` receives the sum.
RingOps ring_allreduce_ops(const float* in, float* out, uint64_t count, int rank, int world_size);

// 2 ranks, the other way: each sends its whole input and adds the peer's whole input as it
// arrives (out = in + peer, bit-identical on both ranks since float addition commutes). The same
// N bytes per direction as the halves, twice the additions, but one step instead of two: no send
// waits on a receive, so a small all-reduce costs one network latency, like the raw exchange,
// instead of two (measured: 8 B to 128 KiB, the halves reach 0.4-0.75x the raw exchange, this
// 0.9-1.05x; from 256 KiB up the halves' smaller reduction wins, docs/allreduce.md).
RingOps whole_exchange_ops(const float* in, float* out, uint64_t count);

// Up to this size a 2-rank all-reduce uses whole_exchange_ops, above it the ring halves.
constexpr uint64_t kWholeExchangeMaxBytes = 128 * 1024;

enum class AllreduceAlgorithm { kRing, kWholeExchange };
// Pure choice by world size and size in bytes (both ranks compute the same, so their wire
// schedules match).
AllreduceAlgorithm choose_allreduce_algorithm(uint64_t bytes, int world_size);
const char* algorithm_name(AllreduceAlgorithm);

// The ops of the chosen algorithm.
RingOps allreduce_ops(const float* in, float* out, uint64_t count, int rank, int world_size);


}  // namespace fabkit::fabric
