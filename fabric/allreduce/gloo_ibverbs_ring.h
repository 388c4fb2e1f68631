// The all-reduce fabkit runs on Gloo's ibverbs transport: Gloo's device, context, pairs and
// registered buffers, driven by fabkit's ring (rdma_ring_plan.h) instead of gloo::AllreduceRing.
//
// Why not gloo::AllreduceRing: its run() (Debian's libgloo 0.0~git20220518, gloo/allreduce_ring.h)
// ends every round with sendNotificationBuf_->send() and never waits for that send, and
// gloo::transport::ibverbs::Buffer's destructor enforces "no send pending" by throwing
// (buffer.cc:63, "Destructing buffer expecting completions"): a throw from a destructor is
// std::terminate. On a real HCA the completion has usually arrived before the algorithm object is
// destroyed; on soft-RoCE under qemu it had not, and the agent died with SIGABRT (issue #37). It
// also sends whole buffers each round (n-1 rounds of N bytes) where a reduce-scatter + all-gather
// ring moves 2(n-1)/n N, which is what NCCL and Gloo's own ring_chunked do.
//
// This ring awaits every write it posts before an all-reduce returns, so its buffers are never
// reused or destroyed with a send in flight. Its pairs run in Gloo's sync mode (the caller's thread
// polls the completion queue, as NCCL's proxy does): in Gloo's default async mode a failed work
// completion (a peer gone mid-write) raises an enforce on Gloo's device thread, where nothing
// catches it and the process aborts; polled here, it is an exception this runner reports.
#pragma once

#include <gloo/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/buffer.h>

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "fabric/allreduce/rdma_ring_plan.h"

namespace fabkit::fabric {

class GlooIbverbsRing {
 public:
  // The chunk one write carries: the receiver reduces one while the next lands. 1 MiB, the slice
  // the socket engine reduces at once (socket_allreduce.cc), keeps a call to few work requests.
  static constexpr uint64_t kChunkBytes = 1 << 20;
  // rdma_ring_plan.h: under Gloo's 8 posted receives per pair, and with the 4 unawaited sends
  // at most 4 + 8 (+ 2 memory-region messages) completions wait in a 16-entry queue.
  static constexpr int kWritesAhead = 4;
  static constexpr int kMaxPendingWrites = 4;

  // Switches the pairs with the ring neighbours to sync mode, waits (through `store`, bounded by
  // timeout_ms) until every rank has, then registers one region for all-reduces of up to max_bytes.
  // Throws gloo::Exception (ibv_reg_mr: memlock) or PeerError (a rank never reached the barrier).
  GlooIbverbsRing(const std::shared_ptr<gloo::Context>& context, gloo::rendezvous::Store& store,
                  uint64_t max_bytes, int timeout_ms);
  GlooIbverbsRing(const GlooIbverbsRing&) = delete;
  GlooIbverbsRing& operator=(const GlooIbverbsRing&) = delete;

  // The registered input and output (max_bytes each): the sweep fills and checks them in place.
  float* input() { return reinterpret_cast<float*>(at(region_layout_.input())); }
  float* output() { return reinterpret_cast<float*>(at(region_layout_.output())); }

  // output[0, count) = the sum over all ranks of input[0, count). Throws what Gloo throws (a peer
  // timeout: gloo::IoException; a failed work completion: gloo::EnforceNotMet).
  void allreduce(uint64_t count);

  // After a throw: waits for the writes still pending (each wait bounded by the pairs' timeout)
  // unless a pair already failed. True when none is left, so the ring may be destroyed; false
  // means destroying it would throw from Gloo's buffer destructor: the caller must leave it
  // allocated (leave_allocated).
  bool settle();
  int writes_pending() const { return pending_; }

 private:
  void land(const RdmaRecv& r);
  char* at(uint64_t offset) { return region_.get() + offset; }
  struct FreeChars {
    void operator()(char* p) const { std::free(p); }
  };

  std::shared_ptr<gloo::Context> context_;
  int rank_ = 0, size_ = 2;
  RdmaRegion region_layout_;
  // [input | output | inbox], page aligned (sweep.cc says why). Declared before the buffers that
  // register it, so they are destroyed first.
  std::unique_ptr<char, FreeChars> region_;
  std::unique_ptr<gloo::transport::Buffer> send_;  // [input | output], to the right neighbour
  std::unique_ptr<gloo::transport::Buffer> recv_;  // [output | inbox], from the left neighbour
  uint64_t plan_count_ = 0;
  RdmaRingPlan plan_;
  std::vector<RdmaAction> actions_;
  int pending_ = 0;           // writes posted (or attempted: Gloo counts those too) not awaited
  bool pair_failed_ = false;  // a pair raised gloo::IoException: it rethrows on every call now
};

// Keeps the ring, the context and the device allocated for the rest of the process: with a write
// still pending, Gloo's buffer destructor throws (std::terminate), and the device's destructor
// would throw on the protection domain the buffers' registrations still hold; the peer may also
// still write into the region. A process that goes on after the failed run keeps them (and Gloo's
// device thread, polling every 10 ms) until it ends.
void leave_allocated(std::unique_ptr<GlooIbverbsRing> ring, std::shared_ptr<gloo::Context> context,
                     std::shared_ptr<gloo::transport::Device> device);

}  // namespace fabkit::fabric
