// fabkit's ring all-reduce (ring_schedule.h) as one-sided RDMA writes, the plan the ibverbs ring
// (gloo_ibverbs_ring.h) posts. Pure: unit-tested by playing every rank's writes in memory.
//
// Every rank registers one region laid out alike, [input | output | inbox], each part `stride`
// bytes. A reduce-scatter step writes its segment into the right neighbour's inbox at the
// segment's own offset, and the neighbour adds it to its input into its output; an all-gather
// step writes the reduced segment straight into the neighbour's output. Each step's segment is
// cut into chunks, so a rank reduces one chunk while the next is on the wire and forwards it as
// soon as it is reduced (NCCL's slices do the same).
//
// Why the writes need no handshake before they land: within one all-reduce every inbox and
// output offset is written once, and a rank's writes of the next all-reduce start only after its
// own left neighbour's chain, which passes through the receiver, has finished with them (the
// receiver has reduced its whole inbox before its first all-gather write, and a write into its
// output for call k+1 needs the reduce-scatter of call k+1, which starts at the receiver).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fabkit::fabric {

struct RdmaWrite {
  uint64_t src = 0;  // offset in the local region (input or output part)
  uint64_t dst = 0;  // offset in the right neighbour's region (output or inbox part)
  uint64_t bytes = 0;
  int64_t after_recv = -1;  // recvs[after_recv] produces src and must be processed first; -1 none
};

struct RdmaRecv {
  uint64_t landed = 0;  // offset where the left neighbour's write lands
  uint64_t bytes = 0;
  bool reduce = false;  // output at `out` = landed + input at `in` (float32); else data is final
  uint64_t out = 0, in = 0;
};

struct RdmaRingPlan {
  std::vector<RdmaWrite> writes;  // in posting order
  std::vector<RdmaRecv> recvs;    // in arrival order: recvs[k] is the left neighbour's writes[k]
};

struct RdmaRegion {
  uint64_t stride = 0;  // bytes per part, >= the largest all-reduce
  uint64_t input() const { return 0; }
  uint64_t output() const { return stride; }
  uint64_t inbox() const { return 2 * stride; }
};

// count floats per rank; chunk_bytes a positive multiple of 4. Segments of no bytes (fewer
// floats than ranks) have no chunk on either side. Throws std::invalid_argument when count * 4
// exceeds the stride or the chunk is not a multiple of 4.
RdmaRingPlan rdma_ring_plan(uint64_t count, int rank, int world_size, const RdmaRegion& region,
                            uint64_t chunk_bytes);

// The order one rank works through a plan in, so the ring can neither deadlock nor overrun Gloo's
// ibverbs queues (gloo/transport/ibverbs/pair.h: 8 posted receives, 8 send work requests and a
// completion queue of 16 per pair, receives re-posted only when the pair is polled):
// - kAwaitSend before a post whenever `max_pending` writes are unawaited, so at most that many
//   send completions (plus the 8 receives) wait in a pair's completion queue;
// - write k is posted only after recv k - writes_ahead is processed, so no rank runs more than
//   `writes_ahead` writes ahead of its left neighbour. Summed round the ring, the writes landed but
//   not yet processed are then at most n * writes_ahead, so with writes_ahead < 8 not every rank
//   can be stuck awaiting a send into a neighbour whose 8 receives are all used (the only wait
//   that does not poll the pair the stuck rank's own receives arrive on).
// Every write is awaited before the list ends: no buffer is reused or destroyed with a send of
// it in flight.
enum class RdmaActionKind { kPost, kAwaitSend, kLand };
struct RdmaAction {
  RdmaActionKind kind;
  size_t index;  // writes[index] for kPost, recvs[index] for kLand; kAwaitSend: the oldest write
};
std::vector<RdmaAction> rdma_ring_actions(const RdmaRingPlan& plan, int writes_ahead,
                                          int max_pending);

}  // namespace fabkit::fabric
