// Pipeline schedules and the stage split, as data (trainer/parallel/pipeline_schedule.h,
// pipeline_split.h): every list runs to its end under rendezvous semantics, each micro-batch is
// forwarded and backpropagated exactly once per stage in a valid order, and 1F1B holds fewer
// micro-batches than GPipe.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "common/errors.h"
#include "trainer/parallel/pipeline_schedule.h"
#include "trainer/parallel/pipeline_split.h"

namespace fabkit::trainer {
namespace {

using Lists = std::vector<std::vector<PipeAction>>;

Lists all_stages(PipeSchedule kind, int stages, int m) {
  Lists l;
  for (int s = 0; s < stages; ++s) l.push_back(make_pipe_schedule(kind, s, stages, m));
  return l;
}

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

TEST(PipeSchedule, EveryShapeRunsWithoutDeadlockAndEachMicroBatchOnce) {
  for (PipeSchedule kind : {PipeSchedule::kGPipe, PipeSchedule::k1F1B}) {
    for (int stages = 1; stages <= 8; ++stages) {
      for (int m = 1; m <= 12; ++m) {
        const Lists l = all_stages(kind, stages, m);
        EXPECT_EQ(simulate_rendezvous(l), "") << to_string(kind) << " S=" << stages << " M=" << m;
        for (int s = 0; s < stages; ++s) {
          std::map<std::pair<PipeOp, int>, int> seen;
          std::map<int, int> forward_at;
          for (size_t i = 0; i < l[s].size(); ++i) {
            const auto& a = l[s][i];
            ++seen[{a.op, a.micro_batch}];
            if (a.op == PipeOp::kForward) forward_at[a.micro_batch] = static_cast<int>(i);
            if (a.op == PipeOp::kBackward) {
              EXPECT_TRUE(forward_at.count(a.micro_batch)) << "backward before forward";
            }
          }
          for (int mb = 0; mb < m; ++mb) {
            EXPECT_EQ((seen[{PipeOp::kForward, mb}]), 1);
            EXPECT_EQ((seen[{PipeOp::kBackward, mb}]), 1);
            EXPECT_EQ((seen[{PipeOp::kRecvActivation, mb}]), s > 0 ? 1 : 0);
            EXPECT_EQ((seen[{PipeOp::kSendGrad, mb}]), s > 0 ? 1 : 0);
            EXPECT_EQ((seen[{PipeOp::kSendActivation, mb}]), s < stages - 1 ? 1 : 0);
            EXPECT_EQ((seen[{PipeOp::kRecvGrad, mb}]), s < stages - 1 ? 1 : 0);
          }
          // Activations held: GPipe all M; 1F1B at most S - s.
          EXPECT_EQ(peak_in_flight(l[s]),
                    kind == PipeSchedule::kGPipe ? m : std::min(stages - s, m));
        }
      }
    }
  }
}

TEST(PipeSchedule, TheSimulatorCatchesADeadlockAndAMismatch) {
  using O = PipeOp;
  // Both stages send first: each waits for the other to listen.
  Lists both_send = {{{O::kSendActivation, 0}, {O::kRecvGrad, 0}},
                     {{O::kSendGrad, 0}, {O::kRecvActivation, 0}}};
  EXPECT_NE(simulate_rendezvous(both_send).find("stage 0 waits at send_act(0)"), std::string::npos);
  Lists mismatch = {{{O::kSendActivation, 1}}, {{O::kRecvActivation, 0}}};
  EXPECT_NE(simulate_rendezvous(mismatch).find("met stage 1 recv_act(0)"), std::string::npos);
}

TEST(PipeSchedule, BubbleTagsAndNames) {
  EXPECT_DOUBLE_EQ(bubble_fraction(4, 8), 3.0 / 11.0);
  EXPECT_DOUBLE_EQ(bubble_fraction(1, 8), 0.0);
  EXPECT_NE(pipe_tag(PipeOp::kSendActivation, 3), pipe_tag(PipeOp::kSendGrad, 3));
  EXPECT_EQ(pipe_tag(PipeOp::kSendGrad, 3), pipe_tag(PipeOp::kRecvGrad, 3));
  EXPECT_EQ(parse_pipe_schedule("1f1b"), PipeSchedule::k1F1B);
  try {
    parse_pipe_schedule("interleaved");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("interleaved"), std::string::npos);
  }
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
