// The RDMA ring's plan and action order (rdma_ring_plan.h), played for every rank in memory: a
// write lands (copied from the sender's region when it lands, not when it was posted) only while
// the receiver has one of Gloo's 8 posted receives free, a receive is freed only when its rank
// processes it, and an awaited send waits until its write landed. The sums must be exact, no
// rank may stall while another could still move, and nothing may be left in flight.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <random>
#include <vector>

#include "fabric/allreduce/rdma_ring_plan.h"
#include "fabric/allreduce/sweep.h"

namespace fabkit::fabric {
namespace {

constexpr int kGlooPostedReceives = 8;  // gloo/transport/ibverbs/pair.h kMaxBuffers

struct Rank {
  std::vector<char> region;
  RdmaRingPlan plan;
  std::vector<RdmaAction> actions;
  size_t next = 0;                    // next action
  std::deque<size_t> in_flight;       // writes posted to the right neighbour, oldest first
  size_t landed_from_left = 0;        // the left neighbour's writes landed here
  size_t processed = 0;               // recvs processed
  size_t awaited = 0, completed = 0;  // own writes awaited / landed at the right neighbour
};

// Plays one all-reduce of `count` floats on every rank, in an order drawn from `rng`. Returns
// false when no rank can move and some are not done (a deadlock).
bool play(std::vector<Rank>& ranks, std::mt19937& rng) {
  const int n = static_cast<int>(ranks.size());
  for (auto& r : ranks) {
    r.next = 0;
    r.landed_from_left = r.processed = 0;
    r.awaited = r.completed = 0;
  }
  for (;;) {
    bool done = true, moved = false, held = false;
    std::vector<int> order(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (int i : order) {
      Rank& me = ranks[static_cast<size_t>(i)];
      Rank& right = ranks[static_cast<size_t>((i + 1) % n)];
      // The network: land the oldest write in flight when the receiver has a receive posted
      // (sometimes not yet, to vary the interleaving).
      const bool can_land = !me.in_flight.empty() && right.landed_from_left - right.processed <
                                                         static_cast<size_t>(kGlooPostedReceives);
      const bool hold = can_land && rng() % 3 == 0;
      held = held || hold;
      if (can_land && !hold) {
        const RdmaWrite& w = me.plan.writes[me.in_flight.front()];
        std::memcpy(right.region.data() + w.dst, me.region.data() + w.src, w.bytes);
        me.in_flight.pop_front();
        ++right.landed_from_left;
        ++me.completed;
        moved = true;
      }
      if (me.next == me.actions.size()) continue;
      done = false;
      const RdmaAction& a = me.actions[me.next];
      if (a.kind == RdmaActionKind::kPost) {
        EXPECT_EQ(a.index, me.completed + me.in_flight.size());  // posted in order
        me.in_flight.push_back(a.index);
      } else if (a.kind == RdmaActionKind::kAwaitSend) {
        if (me.completed <= me.awaited) continue;
        ++me.awaited;
      } else {
        EXPECT_EQ(a.index, me.processed);
        if (me.landed_from_left <= a.index) continue;
        const RdmaRecv& r = me.plan.recvs[a.index];
        if (r.reduce) {
          auto* out = reinterpret_cast<float*>(me.region.data() + r.out);
          auto* got = reinterpret_cast<const float*>(me.region.data() + r.landed);
          auto* in = reinterpret_cast<const float*>(me.region.data() + r.in);
          for (uint64_t k = 0; k < r.bytes / sizeof(float); ++k) out[k] = got[k] + in[k];
        }
        ++me.processed;
      }
      ++me.next;
      moved = true;
    }
    bool idle = true;
    for (const auto& r : ranks) idle = idle && r.in_flight.empty();
    if (done && idle) return true;
    if (!moved && !held) return false;
  }
}

void check_ring(int n, uint64_t count, uint64_t chunk_bytes, unsigned seed) {
  SCOPED_TRACE("n=" + std::to_string(n) + " count=" + std::to_string(count) +
               " chunk=" + std::to_string(chunk_bytes) + " seed=" + std::to_string(seed));
  RdmaRegion layout{(count * sizeof(float) + 4095) / 4096 * 4096};
  std::vector<Rank> ranks(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    Rank& r = ranks[static_cast<size_t>(i)];
    r.region.assign(3 * layout.stride, 0);
    r.plan = rdma_ring_plan(count, i, n, layout, chunk_bytes);
    r.actions = rdma_ring_actions(r.plan, 4, 4);
  }
  std::mt19937 rng(seed);
  // Three calls with a different input each (the sweep keeps one input per size; changing it is
  // stricter: stale data from an earlier call cannot pass).
  for (size_t call = 0; call < 3; ++call) {
    for (int i = 0; i < n; ++i) {
      Rank& r = ranks[static_cast<size_t>(i)];
      fill_input(reinterpret_cast<float*>(r.region.data() + layout.input()), count, i, call);
    }
    ASSERT_TRUE(play(ranks, rng)) << "deadlock in call " << call;
    for (int i = 0; i < n; ++i) {
      const Rank& r = ranks[static_cast<size_t>(i)];
      EXPECT_EQ(r.processed, r.plan.recvs.size());
      EXPECT_EQ(r.awaited, r.plan.writes.size()) << "rank " << i << " left writes unawaited";
      EXPECT_EQ(first_mismatch(reinterpret_cast<const float*>(r.region.data() + layout.output()),
                               count, n, call),
                -1)
          << "rank " << i << " call " << call;
    }
  }
}

TEST(RdmaRingPlan, SumsAreExactForRingsOfTwoToEightRanks) {
  for (int n : {2, 3, 4, 8})
    for (uint64_t count : {1ull, 2ull, 7ull, 1000ull, 4099ull})
      for (unsigned seed : {1u, 2u, 3u}) check_ring(n, count, 64, seed);
}

TEST(RdmaRingPlan, ManyChunksPerStepNeitherDeadlockNorOverrunTheReceives) {
  // 100 chunks of 16 B per segment: far more writes than Gloo's 8 posted receives.
  for (int n : {2, 3, 5})
    for (unsigned seed : {4u, 5u}) check_ring(n, 400 * static_cast<uint64_t>(n), 16, seed);
}

TEST(RdmaRingPlan, WritesTargetTheNeighboursInboxThenItsOutput) {
  RdmaRegion layout{4096};
  RdmaRingPlan p = rdma_ring_plan(10, 0, 2, layout, 1 << 20);
  ASSERT_EQ(p.writes.size(), 2u);
  // Reduce-scatter: our raw input half (segment 0) into the peer's inbox at the same offset.
  EXPECT_EQ(p.writes[0].src, layout.input());
  EXPECT_EQ(p.writes[0].dst, layout.inbox());
  EXPECT_EQ(p.writes[0].bytes, 20u);
  EXPECT_EQ(p.writes[0].after_recv, -1);
  // All-gather: the half we reduced (segment 1) into the peer's output, once it is reduced.
  EXPECT_EQ(p.writes[1].src, layout.output() + 20);
  EXPECT_EQ(p.writes[1].dst, layout.output() + 20);
  EXPECT_EQ(p.writes[1].after_recv, 0);
  ASSERT_EQ(p.recvs.size(), 2u);
  EXPECT_TRUE(p.recvs[0].reduce);
  EXPECT_EQ(p.recvs[0].landed, layout.inbox() + 20);
  EXPECT_EQ(p.recvs[0].out, layout.output() + 20);
  EXPECT_FALSE(p.recvs[1].reduce);
  EXPECT_EQ(p.recvs[1].landed, layout.output());
}

TEST(RdmaRingPlan, EveryWriteIsAwaitedAndNoMoreThanFourArePending) {
  RdmaRegion layout{1 << 20};
  RdmaRingPlan p = rdma_ring_plan(200000, 1, 4, layout, 4096);
  int pending = 0, most = 0;
  for (const RdmaAction& a : rdma_ring_actions(p, 4, 4)) {
    if (a.kind == RdmaActionKind::kPost) most = std::max(most, ++pending);
    if (a.kind == RdmaActionKind::kAwaitSend) --pending;
  }
  EXPECT_EQ(pending, 0);
  EXPECT_EQ(most, 4);
}

TEST(RdmaRingPlan, RefusesASizeBeyondTheRegionAndAnOddChunk) {
  RdmaRegion layout{4096};
  EXPECT_THROW(rdma_ring_plan(1025, 0, 2, layout, 64), std::invalid_argument);
  EXPECT_THROW(rdma_ring_plan(8, 0, 2, layout, 6), std::invalid_argument);
}

}  // namespace
}  // namespace fabkit::fabric
