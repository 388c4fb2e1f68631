#include "fabric/allreduce/gloo_ibverbs_ring.h"

#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/transport/device.h>
#include <gloo/transport/pair.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "fabric/allreduce/allreduce_types.h"

namespace fabkit::fabric {

GlooIbverbsRing::GlooIbverbsRing(const std::shared_ptr<gloo::Context>& context,
                                 gloo::rendezvous::Store& store, uint64_t max_bytes, int timeout_ms)
    : context_(context), rank_(context->rank), size_(context->size) {
  region_layout_.stride = std::max<uint64_t>(4096, (max_bytes + 4095) / 4096 * 4096);
  region_.reset(static_cast<char*>(std::aligned_alloc(4096, 3 * region_layout_.stride)));
  if (!region_) throw std::bad_alloc();
  const int left = (rank_ + size_ - 1) % size_, right = (rank_ + 1) % size_;
  // Sync mode on every rank before any rank registers: a registration sends its memory region to
  // the peer, and a pair still in async mode would hand that completion to Gloo's device thread
  // while this thread polls the same queue.
  for (int peer : {left, right}) context_->getPair(peer)->setSync(true, true);
  const std::string prefix = "fabkit/ibverbs-ring/sync/";
  store.set(prefix + std::to_string(rank_), {'1'});
  std::vector<std::string> keys;
  for (int r = 0; r < size_; ++r) keys.push_back(prefix + std::to_string(r));
  store.wait(keys, std::chrono::milliseconds(timeout_ms));
  const int slot = context_->nextSlot();
  // One registration each way: the left neighbour writes into [output | inbox], we write from
  // [input | output]. The whole region registered both ways would pin 6 parts instead of 4.
  // (If the second throws, the first is destroyed with no send posted: safe.)
  recv_ = context_->getPair(left)->createRecvBuffer(slot, at(region_layout_.output()),
                                                    2 * region_layout_.stride);
  send_ = context_->getPair(right)->createSendBuffer(slot, at(region_layout_.input()),
                                                     2 * region_layout_.stride);
}

void GlooIbverbsRing::land(const RdmaRecv& r) {
  recv_->waitRecv();
  if (r.reduce) gloo::sum<float>(at(r.out), at(r.landed), at(r.in), r.bytes / sizeof(float));
}

void GlooIbverbsRing::allreduce(uint64_t count) {
  if (count != plan_count_) {
    plan_ = rdma_ring_plan(count, rank_, size_, region_layout_, kChunkBytes);
    actions_ = rdma_ring_actions(plan_, kWritesAhead, kMaxPendingWrites);
    plan_count_ = count;
  }
  try {
    for (const RdmaAction& a : actions_) {
      switch (a.kind) {
        case RdmaActionKind::kLand:
          land(plan_.recvs[a.index]);
          break;
        case RdmaActionKind::kAwaitSend:
          send_->waitSend();
          --pending_;
          break;
        case RdmaActionKind::kPost: {
          const RdmaWrite& w = plan_.writes[a.index];
          // Counted before the call: Gloo's Buffer::send counts the send as pending before it
          // posts, so a post that throws (no memory region from the peer in time) leaves one too.
          ++pending_;
          send_->send(w.src - region_layout_.input(), w.bytes, w.dst - region_layout_.output());
          break;
        }
      }
    }
  } catch (const gloo::IoException&) {
    pair_failed_ = true;
    throw;
  }
}

bool GlooIbverbsRing::settle() {
  // A failed pair rethrows its error on every wait (or, in sync mode, polls until its timeout):
  // waiting would only delay the report.
  if (pair_failed_) return pending_ == 0;
  try {
    for (; pending_ > 0; --pending_) send_->waitSend();
  } catch (const gloo::Exception&) {
    return false;
  }
  return true;
}

void leave_allocated(std::unique_ptr<GlooIbverbsRing> ring, std::shared_ptr<gloo::Context> context,
                     std::shared_ptr<gloo::transport::Device> device) {
  struct Kept {
    std::unique_ptr<GlooIbverbsRing> ring;
    std::shared_ptr<gloo::Context> context;
    std::shared_ptr<gloo::transport::Device> device;
  };
  // Deliberately never freed (gloo_ibverbs_ring.h says why).
  static_cast<void>(new Kept{std::move(ring), std::move(context), std::move(device)});
}

}  // namespace fabkit::fabric
