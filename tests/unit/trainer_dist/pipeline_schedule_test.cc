// Pipeline schedules and the stage split, as data (trainer/parallel/pipeline_schedule.h,
// pipeline_split.h): every list runs to its end under rendezvous semantics, each (micro-batch,
// chunk) is forwarded and backpropagated exactly once per rank in a valid order, broken lists
// are refused with the reason, each schedule holds the activations its design promises, and the
// timelines of 1F1B, interleaved 1F1B and ZB-H1 have the published shapes and bubbles.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "common/errors.h"
#include "trainer/parallel/pipeline_schedule.h"
#include "trainer/parallel/pipeline_split.h"

namespace fabkit::trainer {
namespace {

using Lists = std::vector<std::vector<PipeAction>>;

TEST(PipeSchedule, TwoStagesOf1F1BInTheExpectedOrder) {
  using O = PipeOp;
  // Stage 0 hands activation 1 over before it waits on gradient 0; stage 1 takes activation 1
  // before it hands gradient 0 back (the order the play found; both orders meet).
  EXPECT_EQ(make_pipe_schedule(PipeSchedule::k1F1B, 0, 2, 2),
            (std::vector<PipeAction>{{O::kForward, 0},
                                     {O::kSendActivation, 0},
                                     {O::kForward, 1},
                                     {O::kSendActivation, 1},
                                     {O::kRecvGrad, 0},
                                     {O::kBackward, 0},
                                     {O::kRecvGrad, 1},
                                     {O::kBackward, 1}}));
  EXPECT_EQ(make_pipe_schedule(PipeSchedule::k1F1B, 1, 2, 2),
            (std::vector<PipeAction>{{O::kRecvActivation, 0},
                                     {O::kForward, 0},
                                     {O::kBackward, 0},
                                     {O::kRecvActivation, 1},
                                     {O::kSendGrad, 0},
                                     {O::kForward, 1},
                                     {O::kBackward, 1},
                                     {O::kSendGrad, 1}}));
}

// Every shape the runner may be asked for: P <= 8; interleaved with V = 2..4 and M a multiple of
// P up to 16; the others M <= 12.
struct Case {
  PipeSchedule kind;
  PipeShape shape;
};
std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (int p = 1; p <= 8; ++p) {
    for (PipeSchedule kind : {PipeSchedule::kGPipe, PipeSchedule::k1F1B, PipeSchedule::kZBH1}) {
      for (int m = 1; m <= 12; ++m) out.push_back({kind, {p, m, 1}});
    }
    for (int v = 2; v <= 4 && p >= 2; ++v) {
      for (int m = p; m <= 16; m += p) out.push_back({PipeSchedule::kInterleaved1F1B, {p, m, v}});
    }
  }
  return out;
}

std::string name(const Case& c) {
  return to_string(c.kind) + " P=" + std::to_string(c.shape.ranks) +
         " M=" + std::to_string(c.shape.micro_batches) + " V=" + std::to_string(c.shape.chunks);
}

// The runner posts each send as soon as its computation ends (under Gloo). That keeps every
// peer's transfers in the list's order only if each rank lists its sends to a peer in the order of
// the computations that produce them; NCCL, which matches a pair's calls by order, would otherwise
// need the list's order (the runner keeps it there anyway: pipeline_send_order_test.cc).
TEST(PipeSchedule, EveryRankListsItsSendsToAPeerInTheOrderTheirComputationsRun) {
  for (const Case& c : all_cases()) {
    const Lists l = make_pipe_schedules(c.kind, c.shape);
    for (int r = 0; r < c.shape.ranks; ++r) {
      // Per peer: the list positions of the producing computations, in the sends' list order.
      std::map<int, std::vector<size_t>> producers;
      for (size_t j = 0; j < l[r].size(); ++j) {
        const PipeAction& a = l[r][j];
        if (a.op != PipeOp::kSendActivation && a.op != PipeOp::kSendGrad) continue;
        size_t at = j;
        while (at-- > 0) {
          const PipeAction& b = l[r][at];
          const bool makes = a.op == PipeOp::kSendActivation
                                 ? b.op == PipeOp::kForward
                                 : b.op == PipeOp::kBackward || b.op == PipeOp::kBackwardInput;
          if (makes && b.micro_batch == a.micro_batch && b.chunk == a.chunk) break;
        }
        producers[pipe_peer(c.shape, r, a).rank].push_back(at);
      }
      for (const auto& [peer, at] : producers) {
        EXPECT_TRUE(std::is_sorted(at.begin(), at.end()))
            << name(c) << " rank " << r << " -> rank " << peer;
      }
    }
  }
}

TEST(PipeSchedule, EveryShapeRunsWithoutDeadlockAndEachMicroBatchOnce) {
  for (const Case& c : all_cases()) {
    const PipeShape& s = c.shape;
    const int p = s.ranks, last = s.virtual_stages() - 1;
    const Lists l = make_pipe_schedules(c.kind, s);
    ASSERT_EQ(static_cast<int>(l.size()), p) << name(c);
    EXPECT_EQ(validate_pipe_schedules(l, s), "") << name(c);
    EXPECT_EQ(simulate_rendezvous(l, s), "") << name(c);
    // Counted here independently of validate_pipe_schedules: each (micro-batch, chunk) once
    // forward and once backward (whole, or B then W), each transfer a virtual stage has once.
    for (int r = 0; r < p; ++r) {
      EXPECT_EQ(make_pipe_schedule(c.kind, r, s), l[r]) << name(c);
      std::map<std::tuple<PipeOp, int, int>, int> seen;
      std::map<std::pair<int, int>, int> forward_at, input_grad_at;
      for (size_t i = 0; i < l[r].size(); ++i) {
        const auto& a = l[r][i];
        ++seen[{a.op, a.micro_batch, a.chunk}];
        const std::pair<int, int> key{a.micro_batch, a.chunk};
        if (a.op == PipeOp::kForward) forward_at[key] = static_cast<int>(i);
        if (a.op == PipeOp::kBackward || a.op == PipeOp::kBackwardInput) {
          EXPECT_TRUE(forward_at.count(key)) << name(c) << ": backward before forward";
          input_grad_at[key] = static_cast<int>(i);
        }
        if (a.op == PipeOp::kBackwardWeight) {
          EXPECT_TRUE(input_grad_at.count(key)) << name(c) << ": W before B";
        }
      }
      const bool split = c.kind == PipeSchedule::kZBH1;
      for (int v = 0; v < s.chunks; ++v) {
        const int g = v * p + r;
        for (int mb = 0; mb < s.micro_batches; ++mb) {
          EXPECT_EQ((seen[{PipeOp::kForward, mb, v}]), 1) << name(c);
          EXPECT_EQ((seen[{PipeOp::kBackward, mb, v}]), split ? 0 : 1) << name(c);
          EXPECT_EQ((seen[{PipeOp::kBackwardInput, mb, v}]), split ? 1 : 0) << name(c);
          EXPECT_EQ((seen[{PipeOp::kBackwardWeight, mb, v}]), split ? 1 : 0) << name(c);
          EXPECT_EQ((seen[{PipeOp::kRecvActivation, mb, v}]), g > 0 ? 1 : 0) << name(c);
          EXPECT_EQ((seen[{PipeOp::kSendGrad, mb, v}]), g > 0 ? 1 : 0) << name(c);
          EXPECT_EQ((seen[{PipeOp::kSendActivation, mb, v}]), g < last ? 1 : 0) << name(c);
          EXPECT_EQ((seen[{PipeOp::kRecvGrad, mb, v}]), g < last ? 1 : 0) << name(c);
        }
      }
    }
  }
}

TEST(PipeSchedule, ActivationsHeldPerSchedule) {
  for (const Case& c : all_cases()) {
    const int p = c.shape.ranks, m = c.shape.micro_batches, v = c.shape.chunks;
    const Lists l = make_pipe_schedules(c.kind, c.shape);
    for (int r = 0; r < p; ++r) {
      int expected = 0;
      switch (c.kind) {
        case PipeSchedule::kGPipe:  // all M at the turn
          expected = m;
          break;
        case PipeSchedule::k1F1B:  // the P-1-r warm-up forwards and the one of the first pair
          expected = std::min(p - r, m);
          break;
        case PipeSchedule::kZBH1:
          // A micro-batch is held until its W: rank r defers r of them, so every rank holds
          // what 1F1B's rank 0 holds (the paper's "same number of in-flight micro-batches").
          expected = std::min(p, m);
          break;
        case PipeSchedule::kInterleaved1F1B:
          // Megatron's warm-up, (P-1-r) x 2 + (V-1) x P (capped at MV), then the first forward
          // of the steady state before the first backward. Each counts a chunk: 1/V of a stage.
          expected = std::min((p - 1 - r) * 2 + (v - 1) * p + 1, m * v);
          break;
      }
      EXPECT_EQ(peak_in_flight(l[r]), expected) << name(c) << " rank " << r;
    }
    if (c.kind == PipeSchedule::kZBH1) {
      // ZB-H1's point: its most loaded rank holds no more than 1F1B's.
      EXPECT_EQ(peak_in_flight(l[0]),
                peak_in_flight(make_pipe_schedule(PipeSchedule::k1F1B, 0, c.shape)));
    }
  }
}

TEST(PipeSchedule, PeersFollowTheVirtualStages) {
  using O = PipeOp;
  // P = 4, V = 2: virtual stage g = chunk x 4 + rank; rank 3's chunk 0 (g = 3) hands over to
  // rank 0's chunk 1 (g = 4), and gradients come back the same way.
  const PipeShape s{4, 8, 2};
  auto peer = [&](int rank, PipeAction a) {
    const PipePeer x = pipe_peer(s, rank, a);
    return std::vector<int>{x.rank, x.chunk, x.boundary};
  };
  EXPECT_EQ(peer(3, {O::kSendActivation, 5, 0}), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(peer(0, {O::kRecvActivation, 5, 1}), (std::vector<int>{3, 0, 3}));
  EXPECT_EQ(peer(0, {O::kSendGrad, 5, 1}), (std::vector<int>{3, 0, 3}));
  EXPECT_EQ(peer(3, {O::kRecvGrad, 5, 0}), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(peer(1, {O::kSendActivation, 0, 1}), (std::vector<int>{2, 1, 5}));
  // No stage before the first or after the last.
  EXPECT_EQ(pipe_peer(s, 0, {O::kRecvActivation, 0, 0}).rank, -1);
  EXPECT_EQ(pipe_peer(s, 3, {O::kSendActivation, 0, 1}).rank, -1);
  EXPECT_THROW(pipe_peer(s, 0, {O::kForward, 0, 0}), InternalError);
  // P = 2: both neighbours of rank 1's chunk 0 live on rank 0, told apart by the boundary.
  const PipeShape two{2, 2, 2};
  EXPECT_EQ(pipe_peer(two, 1, {O::kRecvActivation, 0, 0}).boundary, 0);
  EXPECT_EQ(pipe_peer(two, 1, {O::kSendActivation, 0, 0}).boundary, 1);
  EXPECT_EQ(pipe_peer(two, 1, {O::kSendActivation, 0, 0}).rank, 0);
}

TEST(PipeSchedule, TheSimulatorCatchesADeadlockAndAMismatch) {
  using O = PipeOp;
  // Both ranks send first: each waits for the other to listen.
  Lists both_send = {{{O::kSendActivation, 0}, {O::kRecvGrad, 0}},
                     {{O::kSendGrad, 0}, {O::kRecvActivation, 0}}};
  EXPECT_NE(simulate_rendezvous(both_send).find("rank 0 waits at send_act(0)"), std::string::npos);
  Lists mismatch = {{{O::kSendActivation, 1}}, {{O::kRecvActivation, 0}}};
  EXPECT_NE(simulate_rendezvous(mismatch).find("met rank 1 recv_act(0)"), std::string::npos);
  // P = 2, V = 2: rank 0's chunk 0 sends over boundary 0 while rank 1's chunk 1 waits on
  // boundary 2 (from rank 0's chunk 1). Same ranks, same direction, same micro-batch, different
  // transfers: a deadlock, not a match.
  const PipeShape two{2, 1, 2};
  Lists crossed = {{{O::kSendActivation, 0, 0}}, {{O::kRecvActivation, 0, 1}}};
  EXPECT_NE(simulate_rendezvous(crossed, two).find("rank 1 waits at recv_act(0, chunk 1)"),
            std::string::npos);
}

// A valid P = 2, M = 1 list of whole backwards, broken one way at a time.
Lists two_ranks_one_micro_batch(bool split) {
  using O = PipeOp;
  Lists l = {{{O::kForward, 0}, {O::kSendActivation, 0}, {O::kRecvGrad, 0}},
             {{O::kRecvActivation, 0}, {O::kForward, 0}}};
  if (split) {
    l[0].push_back({O::kBackwardInput, 0});
    l[0].push_back({O::kBackwardWeight, 0});
    l[1].push_back({O::kBackwardInput, 0});
    l[1].push_back({O::kSendGrad, 0});
    l[1].push_back({O::kBackwardWeight, 0});
  } else {
    l[0].push_back({O::kBackward, 0});
    l[1].push_back({O::kBackward, 0});
    l[1].push_back({O::kSendGrad, 0});
  }
  return l;
}

TEST(PipeSchedule, HandBrokenListsAreRefusedWithTheReason) {
  using O = PipeOp;
  const PipeShape s{2, 1, 1};
  ASSERT_EQ(validate_pipe_schedules(two_ranks_one_micro_batch(false), s), "");
  ASSERT_EQ(validate_pipe_schedules(two_ranks_one_micro_batch(true), s), "");

  // Rank 0 waits on the gradient before it hands the activation over (its send and receive
  // swapped): each list is legal on its own, together they wait for each other.
  Lists swapped = two_ranks_one_micro_batch(false);
  std::swap(swapped[0][1], swapped[0][2]);
  std::string why = validate_pipe_schedules(swapped, s);
  EXPECT_EQ(why, "deadlock: rank 0 waits at recv_grad(0); rank 1 waits at recv_act(0)") << why;

  Lists w_first = two_ranks_one_micro_batch(true);
  std::swap(w_first[0][3], w_first[0][4]);  // W before its B
  why = validate_pipe_schedules(w_first, s);
  EXPECT_EQ(why, "rank 0 backward_weight(0) comes before its backward_input") << why;

  Lists no_recv = two_ranks_one_micro_batch(false);
  no_recv[1].erase(no_recv[1].begin());  // rank 1 forwards an input it never received
  why = validate_pipe_schedules(no_recv, s);
  EXPECT_EQ(why, "rank 1 forward(0) has no recv_act before it") << why;

  Lists backward_first = two_ranks_one_micro_batch(false);
  backward_first[1] = {
      {O::kRecvActivation, 0}, {O::kBackward, 0}, {O::kForward, 0}, {O::kSendGrad, 0}};
  why = validate_pipe_schedules(backward_first, s);
  EXPECT_EQ(why, "rank 1 backward(0) comes before its forward") << why;

  Lists twice = two_ranks_one_micro_batch(false);
  twice[1].push_back({O::kBackward, 0});
  EXPECT_EQ(validate_pipe_schedules(twice, s), "rank 1 backward(0) backpropagates a second time");

  Lists unfinished = two_ranks_one_micro_batch(true);
  unfinished[0].pop_back();  // no W on rank 0
  EXPECT_EQ(validate_pipe_schedules(unfinished, s),
            "rank 0 micro-batch 0 chunk 0 has no backward_weight");

  Lists no_peer = two_ranks_one_micro_batch(false);
  no_peer[0].insert(no_peer[0].begin(), {O::kRecvActivation, 0});
  EXPECT_EQ(validate_pipe_schedules(no_peer, s),
            "rank 0 recv_act(0) has no peer: virtual stage 0 is the first");

  EXPECT_EQ(validate_pipe_schedules(Lists{{}}, s), "1 lists for 2 ranks");
  Lists outside = two_ranks_one_micro_batch(false);
  outside[0][0].chunk = 1;
  EXPECT_EQ(validate_pipe_schedules(outside, s),
            "rank 0 forward(0, chunk 1) is outside the shape (M=1, V=1)");
}

TEST(PipeSchedule, ShapesThatCannotRunAreRefusedWithTheFix) {
  auto message = [](PipeSchedule k, PipeShape s) {
    try {
      check_pipe_shape(k, s);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message(PipeSchedule::kInterleaved1F1B, {4, 8, 2}), "accepted");
  EXPECT_NE(message(PipeSchedule::kInterleaved1F1B, {4, 10, 2})
                .find("must be a multiple of --pp 4 (use --micro-batches 12 or 8)"),
            std::string::npos);
  EXPECT_NE(message(PipeSchedule::kInterleaved1F1B, {4, 3, 2}).find("(use --micro-batches 4)"),
            std::string::npos);
  EXPECT_NE(message(PipeSchedule::kInterleaved1F1B, {4, 8, 1}).find("--virtual-stages 2 or more"),
            std::string::npos);
  EXPECT_NE(message(PipeSchedule::kInterleaved1F1B, {1, 8, 2}).find("--pp 2 or more"),
            std::string::npos);
  EXPECT_NE(message(PipeSchedule::kZBH1, {4, 8, 2}).find("use --virtual-stages 1"),
            std::string::npos);
  EXPECT_NE(message(PipeSchedule::k1F1B, {4, 0, 1}).find("at least 1"), std::string::npos);
  EXPECT_NE(message(PipeSchedule::k1F1B, {8, 1 << 27, 1}).find("below 2^30"), std::string::npos);
  EXPECT_THROW(make_pipe_schedules(PipeSchedule::kInterleaved1F1B, PipeShape{4, 6, 2}), UsageError);
}

TEST(PipeSchedule, TagsAreUniquePerTransferAndFit) {
  // Every transfer of a step has its own tag, and both ends compute the same one.
  for (const PipeShape& s : {PipeShape{4, 8, 2}, PipeShape{2, 6, 3}, PipeShape{8, 12, 1}}) {
    const PipeSchedule kind = s.chunks > 1 ? PipeSchedule::kInterleaved1F1B : PipeSchedule::k1F1B;
    const Lists l = make_pipe_schedules(kind, s);
    std::map<int, int> sends, recvs;  // tag -> count
    for (int r = 0; r < s.ranks; ++r) {
      for (const auto& a : l[r]) {
        if (is_compute(a.op)) continue;
        const int tag = pipe_tag(s, a.op, a.micro_batch, pipe_peer(s, r, a).boundary);
        EXPECT_GE(tag, 0);
        const bool send = a.op == PipeOp::kSendActivation || a.op == PipeOp::kSendGrad;
        ++(send ? sends : recvs)[tag];
      }
    }
    EXPECT_EQ(sends, recvs);
    for (const auto& [tag, n] : sends) EXPECT_EQ(n, 1) << "tag " << tag;
  }
  const PipeShape s{4, 8, 2};
  EXPECT_EQ(pipe_tag(s, PipeOp::kSendActivation, 3, 5), 2 * (3 * 8 + 5));
  EXPECT_EQ(pipe_tag(s, PipeOp::kRecvGrad, 3, 5), 2 * (3 * 8 + 5) + 1);
  EXPECT_THROW(pipe_tag(s, PipeOp::kForward, 0, 0), InternalError);
  // The largest tag, 2 x ((M-1) x PV + PV-2) + 1, against 2^30: with PV = 8 the last M that
  // fits is 2^26 (2 x (2^26 x 8 - 2) + 1 = 2^30 - 3).
  EXPECT_TRUE(pipe_tags_fit({4, 1 << 26, 2}));
  EXPECT_FALSE(pipe_tags_fit({4, (1 << 26) + 1, 2}));
  EXPECT_TRUE(pipe_tags_fit({1, 1 << 30, 1}));  // one stage: no transfers at all
}

TEST(PipeSchedule, BubbleTagsAndNames) {
  EXPECT_DOUBLE_EQ(bubble_fraction(4, 8), 3.0 / 11.0);
  EXPECT_DOUBLE_EQ(bubble_fraction(1, 8), 0.0);
  EXPECT_DOUBLE_EQ(bubble_fraction(PipeSchedule::kGPipe, {4, 8, 1}), 3.0 / 11.0);
  EXPECT_DOUBLE_EQ(bubble_fraction(PipeSchedule::k1F1B, {4, 8, 1}), 3.0 / 11.0);
  EXPECT_DOUBLE_EQ(bubble_fraction(PipeSchedule::kInterleaved1F1B, {4, 8, 2}), 3.0 / 19.0);
  EXPECT_DOUBLE_EQ(bubble_fraction(PipeSchedule::kZBH1, {4, 8, 1}), 3.0 / 27.0);
  for (PipeSchedule k : {PipeSchedule::kGPipe, PipeSchedule::k1F1B, PipeSchedule::kInterleaved1F1B,
                         PipeSchedule::kZBH1}) {
    EXPECT_EQ(parse_pipe_schedule(to_string(k)), k);
  }
  EXPECT_EQ(parse_pipe_schedule("interleaved-1f1b"), PipeSchedule::kInterleaved1F1B);
  EXPECT_EQ(parse_pipe_schedule("zb-h1"), PipeSchedule::kZBH1);
  try {
    parse_pipe_schedule("interleaved");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--schedule interleaved is not a pipeline schedule"),
              std::string::npos);
    EXPECT_NE(std::string(e.what()).find("zb-h1"), std::string::npos);
  }
  EXPECT_EQ(to_string(PipeAction{PipeOp::kBackwardWeight, 3, 1}), "backward_weight(3, chunk 1)");
  EXPECT_EQ(to_string(PipeAction{PipeOp::kSendGrad, 2}), "send_grad(2)");
}

// The published shapes, P = 4, M = 8. The figures themselves (Narayanan et al. 2021, "Efficient
// Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", Figure 4; Qi et al.
// 2023, "Zero Bubble Pipeline Parallelism", Figure 3 top) are images we could not view here, so
// the rows below were not transcribed from them cell by cell: they were derived, by a separate
// script and not from this generator, from the authors' published rules: each rank's order from
// Megatron-LM's schedules.py (1F1B: P-1-r warm-up forwards; interleaved: get_schedule_table with
// groups of P, warm-up (P-1-r) x 2 + (V-1) x P) and from the zero-bubble authors' efficiency.py
// get_hand_schedule(..., warmup_c=1), their handcrafted ZB-H1 (a call with P = 4, M = 8,
// F = B = W = 1 sits commented out beside it), then each computation placed as early as its rank
// and its input allow, as their simulators do. Their own simulators (get_hand_schedule,
// get_interleave_schedule) give the same makespans: 33 (1F1B, F = 1, B = 2), 57 (interleaved,
// per chunk F = 1, B = 2), 27 (ZB-H1). Cells as the figures draw them: one column per forward, a
// backward twice as wide in Megatron's figure, F = B = W in the zero-bubble one; in the
// interleaved figure a column is one chunk's forward (half of a 1F1B forward) and chunk 1 is the
// lighter shade, here lower case. The figures number micro-batches from 1, the rows from 0.
TEST(PipeSchedule, TimelinesHaveThePublishedShapes) {
  const PipeShape s{4, 8, 1};
  auto text = [](PipeSchedule k, const PipeShape& shape, PipeCosts c) {
    return render_timeline_text(simulate_timeline(make_pipe_schedules(k, shape), shape, c), shape);
  };
  // Megatron-LM Figure 4 top (1F1B): rank 0 idles 6 columns between its warm-up and B0, the
  // last rank alternates from the start; 33 columns.
  EXPECT_EQ(text(PipeSchedule::k1F1B, s, {1, 2, 0}),
            "rank 0 | F0 F1 F2 F3 .  .  .  .  .  .  B0 B0 F4 B1 B1 F5 B2 B2 F6 B3 B3 F7 B4 B4 .  "
            "B5 B5 .  B6 B6 .  B7 B7\n"
            "rank 1 | .  F0 F1 F2 .  .  .  .  B0 B0 F3 B1 B1 F4 B2 B2 F5 B3 B3 F6 B4 B4 F7 B5 B5 "
            ".  B6 B6 .  B7 B7 .  .\n"
            "rank 2 | .  .  F0 F1 .  .  B0 B0 F2 B1 B1 F3 B2 B2 F4 B3 B3 F5 B4 B4 F6 B5 B5 F7 B6 "
            "B6 .  B7 B7 .  .  .  .\n"
            "rank 3 | .  .  .  F0 B0 B0 F1 B1 B1 F2 B2 B2 F3 B3 B3 F4 B4 B4 F5 B5 B5 F6 B6 B6 F7 "
            "B7 B7 .  .  .  .  .  .\n");
  // Megatron-LM Figure 4 bottom (interleaved, 2 chunks per device): rank 0 runs micro-batches
  // 0-3 through chunk 0, the same through chunk 1, then 4-6 before its first backward.
  const PipeShape vs{4, 8, 2};
  EXPECT_EQ(text(PipeSchedule::kInterleaved1F1B, vs, {1, 2, 0}),
            "rank 0 | F0 F1 F2 F3 f0 f1 f2 f3 F4 F5 F6 .  .  .  b0 b0 F7 b1 b1 .  f4 b2 b2 f5 b3 "
            "b3 f6 B0 B0 f7 B1 B1 B2 B2 .  B3 B3 .  b4 b4 .  b5 b5 .  b6 b6 .  b7 b7 B4 B4 B5 B5 "
            "B6 B6 B7 B7\n"
            "rank 1 | .  F0 F1 F2 F3 f0 f1 f2 f3 F4 .  .  b0 b0 F5 b1 b1 F6 b2 b2 F7 b3 b3 f4 B0 "
            "B0 f5 B1 B1 f6 B2 B2 f7 B3 B3 .  b4 b4 .  b5 b5 .  b6 b6 .  b7 b7 B4 B4 B5 B5 B6 B6 "
            "B7 B7 .  .\n"
            "rank 2 | .  .  F0 F1 F2 F3 f0 f1 f2 .  b0 b0 f3 b1 b1 F4 b2 b2 F5 b3 b3 F6 B0 B0 F7 "
            "B1 B1 f4 B2 B2 f5 B3 B3 f6 b4 b4 f7 b5 b5 .  b6 b6 .  b7 b7 B4 B4 B5 B5 B6 B6 B7 B7 "
            ".  .  .  .\n"
            "rank 3 | .  .  .  F0 F1 F2 F3 f0 b0 b0 f1 b1 b1 f2 b2 b2 f3 b3 b3 F4 B0 B0 F5 B1 B1 "
            "F6 B2 B2 F7 B3 B3 f4 b4 b4 f5 b5 b5 f6 b6 b6 f7 b7 b7 B4 B4 B5 B5 B6 B6 B7 B7 .  .  "
            ".  .  .  .\n");
  // Zero-bubble Figure 3 top (ZB-H1): the B passes go back one column per rank, rank r runs its
  // W passes r behind its B passes, and the last r columns of rank r are the deferred W's.
  EXPECT_EQ(text(PipeSchedule::kZBH1, s, {1, 1, 1}),
            "rank 0 | F0 F1 F2 F3 .  .  .  B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 "
            "B7 W7\n"
            "rank 1 | .  F0 F1 F2 .  .  B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 "
            "W6 W7\n"
            "rank 2 | .  .  F0 F1 .  B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 B7 W5 "
            "W6 W7\n"
            "rank 3 | .  .  .  F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 "
            "W6 W7\n");
}

// The step's makespan and idle share, each against the closed form. Cost model: a stage's
// forward costs 1 and its backward 2 (B = W = 1, a whole backward B + W = 2), Megatron's and
// the zero-bubble paper's assumption; an interleaved chunk holds 1/V of a stage's layers, so it
// costs 1/V forward and 2/V backward.
TEST(PipeSchedule, MakespansAndBubblesMatchTheory) {
  for (const Case& c : all_cases()) {
    const double p = c.shape.ranks, m = c.shape.micro_batches, v = c.shape.chunks;
    const PipeCosts cost{1 / v, 1 / v, 1 / v};
    const PipeTimeline t = simulate_timeline(make_pipe_schedules(c.kind, c.shape), c.shape, cost);
    switch (c.kind) {
      case PipeSchedule::kGPipe:
      case PipeSchedule::k1F1B:
        // 3M of work on each rank, and the first and last ranks wait out P-1 forwards and P-1
        // backwards: 3(M+P-1).
        EXPECT_NEAR(t.makespan, 3 * (m + p - 1), 1e-9) << name(c);
        EXPECT_NEAR(t.bubble, (p - 1) / (m + p - 1), 1e-9) << name(c);
        break;
      case PipeSchedule::kInterleaved1F1B:
        EXPECT_NEAR(t.makespan, 3 * (m + (p - 1) / v), 1e-9) << name(c);
        EXPECT_NEAR(t.bubble, (p - 1) / (v * m + p - 1), 1e-9) << name(c);
        break;
      case PipeSchedule::kZBH1:
        // (P-1)(F + B - W) = P-1 idle per rank once each rank has r <= M-1 W passes to defer.
        if (m >= p) {
          EXPECT_NEAR(t.makespan, 3 * m + p - 1, 1e-9) << name(c);
          EXPECT_NEAR(t.bubble, (p - 1) / (3 * m + p - 1), 1e-9) << name(c);
        } else {
          EXPECT_GT(t.bubble, (p - 1) / (3 * m + p - 1)) << name(c);
        }
        break;
    }
    if (c.kind == PipeSchedule::kZBH1 && m < p) continue;  // its closed form needs M >= P
    EXPECT_NEAR(t.bubble, bubble_fraction(c.kind, c.shape), 1e-9) << name(c);
  }
  // ZB-H1 against 1F1B at P = 4, M = 8: 3 idle units per rank against 9, a third; as shares
  // of the step 1/9 against 3/11.
  const PipeShape s{4, 8, 1};
  const PipeTimeline one = simulate_timeline(make_pipe_schedules(PipeSchedule::k1F1B, s), s);
  const PipeTimeline zb = simulate_timeline(make_pipe_schedules(PipeSchedule::kZBH1, s), s);
  EXPECT_DOUBLE_EQ(one.bubble, 3.0 / 11.0);
  EXPECT_DOUBLE_EQ(zb.bubble, 1.0 / 9.0);
  EXPECT_DOUBLE_EQ(zb.bubble * zb.makespan * 3, one.bubble * one.makespan);
}

TEST(PipeSchedule, TimelineRenderings) {
  const PipeShape s{4, 8, 1};
  const PipeTimeline t = simulate_timeline(make_pipe_schedules(PipeSchedule::k1F1B, s), s);
  const std::string html = render_timeline_html(t, s, "1f1b <P=4> & M=8");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<title>1f1b &lt;P=4&gt; &amp; M=8</title>"), std::string::npos);
  // Self-contained: nothing fetched, nothing run.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = html.find(needle); at != std::string::npos; at = html.find(needle, at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count("<tr>"), 4u);
  EXPECT_EQ(count("<td class=\"F0\" colspan=\"1\""), 32u);  // a forward: one column
  EXPECT_EQ(count("<td class=\"X0\" colspan=\"2\""), 32u);  // a whole backward: two
  EXPECT_EQ(count("<td class=\"idle\">"), 4u * 33 - 32 * 3);
  EXPECT_NE(html.find("makespan 33, bubble 27.3%"), std::string::npos);
  // More than two chunks: every label names its chunk.
  const PipeShape three{2, 2, 3};
  const std::string txt = render_timeline_text(
      simulate_timeline(make_pipe_schedules(PipeSchedule::kInterleaved1F1B, three), three), three);
  EXPECT_EQ(txt.rfind("rank 0 | F0.0 F1.0 F0.1 F1.1 F0.2 F1.2", 0), 0u) << txt;
  EXPECT_NE(txt.find("B1.2"), std::string::npos) << txt;
  // A list that can never finish is not timed.
  using O = PipeOp;
  // Rank 0 backpropagates before it forwards: its B waits on rank 1's, which waits on rank 0's
  // forward.
  const Lists stuck = {{{O::kRecvGrad, 0}, {O::kBackward, 0}, {O::kForward, 0}},
                       {{O::kForward, 0}, {O::kBackward, 0}}};
  EXPECT_THROW(simulate_timeline(stuck, PipeShape{2, 1, 1}), InternalError);
}

TEST(StageSplit, BalancesParametersCountingEmbeddingAndHead) {
  // 8 equal layers of 10; a big embedding (25) on the first stage and head (15) on the last.
  const std::vector<int64_t> layers(8, 10);
  // Stage costs 25+10a, 10b, 15+10c with a+b+c = 8 sum to 120; 40 each is impossible (stage 0
  // at <= 40 takes one layer, the last at <= 40 two, leaving 5 x 10 = 50 in the middle), and 45
  // is reached (e.g. 1,4,3 -> 35,40,45), so the largest stage must be exactly 45.
  const std::vector<int> c = balance_stage_layers(layers, 25, 15, 3);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0] + c[1] + c[2], 8);
  EXPECT_EQ(std::max({25 + 10 * c[0], 10 * c[1], 15 + 10 * c[2]}), 45);
  EXPECT_EQ(balance_stage_layers(layers, 0, 0, 2), (std::vector<int>{4, 4}));
  EXPECT_EQ(balance_stage_layers(layers, 0, 0, 8), (std::vector<int>(8, 1)));
  EXPECT_THROW(balance_stage_layers(layers, 0, 0, 9), UsageError);
  EXPECT_EQ(stage_layer_starts({1, 4, 3}), (std::vector<int>{0, 1, 5, 8}));
}

TEST(StageSplit, ParsesAndRefusesByHand) {
  EXPECT_EQ(parse_stage_layers("10,11,11", 32, 3), (std::vector<int>{10, 11, 11}));
  auto message = [](const std::string& text, int layers, int stages) {
    try {
      parse_stage_layers(text, layers, stages);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("10,11", 32, 3).find("has 2 entries but --pp is 3"), std::string::npos);
  EXPECT_NE(message("10,11,12", 32, 3).find("sums to 33 layers but the model has 32"),
            std::string::npos);
  EXPECT_NE(message("10,x,22", 32, 3).find("'x' is not a positive layer count"), std::string::npos);
  EXPECT_NE(message("0,16,16", 32, 3).find("'0'"), std::string::npos);
}

}  // namespace
}  // namespace fabkit::trainer
