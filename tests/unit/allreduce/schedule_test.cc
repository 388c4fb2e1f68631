// Pure pieces: nccl-tests arithmetic, the ring schedule, the input/check functions, the JSON.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "common/errors.h"
#include "fabric/allreduce/allreduce_types.h"
#include "fabric/allreduce/ring_schedule.h"
#include "fabric/allreduce/send_recv_engine.h"
#include "fabric/allreduce/sweep.h"

namespace fabkit::fabric {
namespace {

TEST(AllreduceMath, NcclTestsBandwidthConventions) {
  // 1 GB in 1 s: algbw 1 GB/s; busbw = algbw * 2(n-1)/n.
  EXPECT_DOUBLE_EQ(algbw_gbps(1000000000ull, 1e6), 1.0);
  EXPECT_DOUBLE_EQ(allreduce_busbw_gbps(1.0, 2), 1.0);
  EXPECT_DOUBLE_EQ(allreduce_busbw_gbps(1.0, 4), 1.5);
  EXPECT_DOUBLE_EQ(allreduce_busbw_gbps(2.0, 8), 3.5);
  EXPECT_EQ(algbw_gbps(100, 0), 0);
}

TEST(AllreduceMath, DefaultSizesAre8BytesTo256MiBTimes4) {
  auto sizes = default_sizes_bytes();
  ASSERT_EQ(sizes.size(), 14u);
  EXPECT_EQ(sizes.front(), 8u);
  EXPECT_EQ(sizes[1], 32u);
  EXPECT_EQ(sizes[12], 128ull << 20);
  EXPECT_EQ(sizes.back(), 256ull << 20);
}

TEST(AllreduceMath, EffectiveSizesRoundDownToWholeFloats) {
  AllreduceSpec s;
  s.sizes_bytes = {4, 7, 4001, 1 << 20};
  EXPECT_EQ(effective_sizes(s), (std::vector<uint64_t>{4, 4, 4000, 1 << 20}));
}

TEST(AllreduceSpecValidation, NamesFieldAndValue) {
  AllreduceSpec s;
  s.token = "t";
  s.peer_addr = "1.2.3.4";
  s.rank = 2;
  try {
    validate_spec(s);
    FAIL() << "rank 2 of 2 accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("rank = 2"), std::string::npos) << e.what();
  }
  s.rank = 0;
  s.sizes_bytes = {2};
  EXPECT_THROW(validate_spec(s), UsageError);
  s.sizes_bytes = {8};
  s.token.clear();
  EXPECT_THROW(validate_spec(s), UsageError);
  s.token = "t";
  s.world_size = 3;  // needs ring_addrs
  EXPECT_THROW(validate_spec(s), UsageError);
  s.ring_addrs = {"a", "b", "c"};
  EXPECT_NO_THROW(validate_spec(s));
}

TEST(RingSchedule, SegmentsCoverOddCountsExactly) {
  auto segs = ring_segments(1001, 3);
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(segs[0].count, 334u);
  EXPECT_EQ(segs[1].count, 334u);
  EXPECT_EQ(segs[2].count, 333u);
  EXPECT_EQ(segs[1].first, 334u);
  EXPECT_EQ(segs[2].first + segs[2].count, 1001u);
  auto tiny = ring_segments(1, 2);  // one float over two ranks: one empty segment
  EXPECT_EQ(tiny[0].count + tiny[1].count, 1u);
}

TEST(RingSchedule, TwoRanksSendPeerHalfThenReducedHalf) {
  std::vector<float> in(10), out(10);
  auto ops = ring_allreduce_ops(in.data(), out.data(), 10, 0, 2);
  ASSERT_EQ(ops.sends.size(), 2u);
  ASSERT_EQ(ops.recvs.size(), 2u);
  // Rank 0 sends segment 0 of its input, reduces segment 1, then returns reduced segment 1 and
  // receives the finished segment 0 straight into the output.
  EXPECT_EQ(ops.sends[0].src, reinterpret_cast<const char*>(in.data()));
  EXPECT_EQ(ops.sends[0].dep, -1);
  EXPECT_EQ(ops.recvs[0].dst, reinterpret_cast<char*>(out.data() + 5));
  EXPECT_EQ(ops.recvs[0].addend, in.data() + 5);
  EXPECT_EQ(ops.sends[1].src, reinterpret_cast<const char*>(out.data() + 5));
  EXPECT_EQ(ops.sends[1].dep, 0);
  EXPECT_EQ(ops.recvs[1].dst, reinterpret_cast<char*>(out.data()));
  EXPECT_EQ(ops.recvs[1].addend, nullptr);
}

TEST(RingSchedule, EachStepForwardsTheSegmentReceivedTheStepBefore) {
  std::vector<float> in(103), out(103);
  for (int rank = 0; rank < 4; ++rank) {
    auto ops = ring_allreduce_ops(in.data(), out.data(), 103, rank, 4);
    ASSERT_EQ(ops.sends.size(), 6u);
    for (size_t s = 1; s < ops.sends.size(); ++s) {
      EXPECT_EQ(ops.sends[s].dep, static_cast<int>(s) - 1);
      EXPECT_EQ(ops.sends[s].src, ops.recvs[s - 1].dst) << "rank " << rank << " step " << s;
      EXPECT_EQ(ops.sends[s].len, ops.recvs[s - 1].len);
    }
  }
}

TEST(RingSchedule, SmallTwoRankSizesExchangeWholeBuffers) {
  std::vector<float> in(10), out(10);
  auto ops = whole_exchange_ops(in.data(), out.data(), 10);
  ASSERT_EQ(ops.sends.size(), 1u);
  ASSERT_EQ(ops.recvs.size(), 1u);
  // One step: the whole input goes out with no dependency; the whole peer input is added to ours.
  EXPECT_EQ(ops.sends[0].src, reinterpret_cast<const char*>(in.data()));
  EXPECT_EQ(ops.sends[0].len, 40u);
  EXPECT_EQ(ops.sends[0].dep, -1);
  EXPECT_EQ(ops.recvs[0].dst, reinterpret_cast<char*>(out.data()));
  EXPECT_EQ(ops.recvs[0].len, 40u);
  EXPECT_EQ(ops.recvs[0].addend, in.data());
}

TEST(RingSchedule, AlgorithmChoiceBySizeAndWorld) {
  EXPECT_EQ(choose_allreduce_algorithm(4, 2), AllreduceAlgorithm::kWholeExchange);
  EXPECT_EQ(choose_allreduce_algorithm(kWholeExchangeMaxBytes, 2), AllreduceAlgorithm::kWholeExchange);
  EXPECT_EQ(choose_allreduce_algorithm(kWholeExchangeMaxBytes + 4, 2), AllreduceAlgorithm::kRing);
  // The whole exchange is a 2-rank shortcut: a ring of 3 keeps the ring at every size.
  EXPECT_EQ(choose_allreduce_algorithm(4, 3), AllreduceAlgorithm::kRing);
  std::vector<float> in(8), out(8);
  EXPECT_EQ(allreduce_ops(in.data(), out.data(), 8, 0, 2).sends.size(), 1u);
  EXPECT_EQ(allreduce_ops(in.data(), out.data(), 8, 0, 3).sends.size(), 4u);
  const uint64_t big = kWholeExchangeMaxBytes / sizeof(float) + 1;
  std::vector<float> bin(big), bout(big);
  EXPECT_EQ(allreduce_ops(bin.data(), bout.data(), big, 1, 2).sends.size(), 2u);
}

TEST(Sweep, InputsSumExactlyAndMismatchIsFound) {
  std::vector<float> out(1000);
  for (uint64_t i = 0; i < out.size(); ++i) out[i] = input_value(0, i, 3) + input_value(1, i, 3);
  EXPECT_EQ(first_mismatch(out.data(), out.size(), 2, 3), -1);
  EXPECT_EQ(first_mismatch(out.data(), out.size(), 2, 4), 0) << "another size index must differ";
  out[617] += 1;
  EXPECT_EQ(first_mismatch(out.data(), out.size(), 2, 3), 617);
  out[617] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(first_mismatch(out.data(), out.size(), 2, 3), 617);
  // Inputs differ between ranks, so a rank that returned its own data would fail the check.
  EXPECT_NE(input_value(0, 5, 0), input_value(1, 5, 0));
}

TEST(Pipeline, AddFloats) {
  float a[5] = {1, 2, 3, 4, 5}, b[5] = {10, 20, 30, 40, 50}, c[5];
  add_floats(c, a, b, 5);
  EXPECT_EQ(c[4], 55);
  EXPECT_EQ(c[0], 11);
}

TEST(Sweep, TimedCallsAreCheckedNotTheWarmup) {
  // A collective that writes the right sum during the warmup only must fail the check: the
  // output is reset to NaN before the timed calls.
  int calls = 0;
  SweepOptions opt;
  opt.iters = 3;
  opt.warmup_iters = 2;
  auto lazy = [&](const float*, float* out, uint64_t count) {
    if (++calls <= opt.warmup_iters)
      for (uint64_t i = 0; i < count; ++i) out[i] = input_value(0, i, 0) + input_value(1, i, 0);
  };
  auto res = run_sweep({64}, 0, opt, lazy);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_FALSE(res[0].correct);
  EXPECT_EQ(calls, 5);
  auto honest = [&](const float*, float* out, uint64_t count) {
    for (uint64_t i = 0; i < count; ++i) out[i] = input_value(0, i, 0) + input_value(1, i, 0);
  };
  EXPECT_TRUE(run_sweep({64}, 0, opt, honest)[0].correct);
}

// One slow call (a preempted rank) moves the mean but not the fastest call.
TEST(Sweep, TheFastestTimedCallIsKeptBesideTheMean) {
  int calls = 0;
  SweepOptions opt;
  opt.iters = 4;
  opt.warmup_iters = 1;
  auto one_slow = [&](const float*, float* out, uint64_t count) {
    if (++calls == 3) std::this_thread::sleep_for(std::chrono::milliseconds(80));
    for (uint64_t i = 0; i < count; ++i) out[i] = input_value(0, i, 0) + input_value(1, i, 0);
  };
  auto res = run_sweep({64}, 0, opt, one_slow);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_TRUE(res[0].correct);
  EXPECT_GE(res[0].time_us, 80e3 / 4);  // the sleep, spread over 4 timed calls
  EXPECT_GT(res[0].best_time_us, 0.0);
  EXPECT_LT(res[0].best_time_us, 40e3);  // one of the three calls that did not sleep
  EXPECT_LT(res[0].best_time_us, res[0].time_us);
  EXPECT_EQ(to_json(res[0])["best_time_us"], res[0].best_time_us);
}

TEST(AllreduceJson, HasContractFields) {
  TransportRun r;
  r.transport = "fabkit-socket";
  r.status = "ok";
  r.sizes.push_back({64, 12.5, 5.12, 5.12, true});
  Json j = to_json(r);
  EXPECT_EQ(j["transport"], "fabkit-socket");
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["sizes"][0]["bytes"], 64);
  EXPECT_EQ(j["sizes"][0]["time_us"], 12.5);
  EXPECT_EQ(j["sizes"][0]["busbw_gbps"], 5.12);
  EXPECT_EQ(j["sizes"][0]["correct"], true);
  EXPECT_TRUE(j["extra"].is_object());
}

}  // namespace
}  // namespace fabkit::fabric
