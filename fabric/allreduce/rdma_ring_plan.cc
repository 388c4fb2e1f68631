#include "fabric/allreduce/rdma_ring_plan.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "fabric/allreduce/ring_schedule.h"

namespace fabkit::fabric {

RdmaRingPlan rdma_ring_plan(uint64_t count, int rank, int world_size, const RdmaRegion& region,
                            uint64_t chunk_bytes) {
  if (chunk_bytes == 0 || chunk_bytes % sizeof(float) != 0)
    throw std::invalid_argument("chunk_bytes " + std::to_string(chunk_bytes) +
                                " is not a positive multiple of 4");
  if (count * sizeof(float) > region.stride)
    throw std::invalid_argument(std::to_string(count * sizeof(float)) +
                                " B do not fit a region part of " + std::to_string(region.stride) +
                                " B");
  RdmaRingPlan plan;
  const std::vector<RingStep> steps = ring_steps(count, rank, world_size);
  int64_t prev_recv_first = -1;  // index of the previous step's first recv chunk
  for (size_t s = 0; s < steps.size(); ++s) {
    const RingStep& st = steps[s];
    const uint64_t send_bytes = st.send.count * sizeof(float);
    const uint64_t send_at = st.send.first * sizeof(float);
    // The right neighbour's receive of this step is this segment, reduced there while the
    // reduce-scatter lasts (its inbox) and final in the all-gather (its output).
    const bool into_inbox = s + 1 < static_cast<size_t>(world_size);
    const uint64_t src_base = st.send_input ? region.input() : region.output();
    const uint64_t dst_base = into_inbox ? region.inbox() : region.output();
    for (uint64_t c = 0, off = 0; off < send_bytes; ++c, off += chunk_bytes) {
      RdmaWrite w;
      w.src = src_base + send_at + off;
      w.dst = dst_base + send_at + off;
      w.bytes = std::min(chunk_bytes, send_bytes - off);
      // Step s forwards what step s-1 received: the same segment, so chunk c of one is chunk c of
      // the other.
      w.after_recv = st.send_input ? -1 : prev_recv_first + static_cast<int64_t>(c);
      plan.writes.push_back(w);
    }
    prev_recv_first = static_cast<int64_t>(plan.recvs.size());
    const uint64_t recv_bytes = st.recv.count * sizeof(float);
    const uint64_t recv_at = st.recv.first * sizeof(float);
    for (uint64_t off = 0; off < recv_bytes; off += chunk_bytes) {
      RdmaRecv r;
      r.bytes = std::min(chunk_bytes, recv_bytes - off);
      r.reduce = st.recv_reduce;
      r.landed = (st.recv_reduce ? region.inbox() : region.output()) + recv_at + off;
      r.out = region.output() + recv_at + off;
      r.in = region.input() + recv_at + off;
      plan.recvs.push_back(r);
    }
  }
  return plan;
}

std::vector<RdmaAction> rdma_ring_actions(const RdmaRingPlan& plan, int writes_ahead,
                                          int max_pending) {
  std::vector<RdmaAction> out;
  size_t landed = 0;
  int pending = 0;
  for (size_t k = 0; k < plan.writes.size(); ++k) {
    const int64_t need =
        std::max<int64_t>(plan.writes[k].after_recv, static_cast<int64_t>(k) - writes_ahead);
    for (; static_cast<int64_t>(landed) <= need; ++landed)
      out.push_back({RdmaActionKind::kLand, landed});
    if (pending == max_pending) {
      out.push_back({RdmaActionKind::kAwaitSend, 0});
      --pending;
    }
    out.push_back({RdmaActionKind::kPost, k});
    ++pending;
  }
  for (; landed < plan.recvs.size(); ++landed) out.push_back({RdmaActionKind::kLand, landed});
  for (; pending > 0; --pending) out.push_back({RdmaActionKind::kAwaitSend, 0});
  return out;
}

}  // namespace fabkit::fabric
