// What fabtrain does on one device that the rest of the suite runs only on CPU (issue #38, item 6):
// two ranks sharing one device train FSDP-style and match the 1-rank run step by step; a sharded
// checkpoint saved and resumed; activation offload in a real step; float16 with its dynamic loss
// scale; the pipeline engine, 2 stages on one device, under every schedule.
//
// The device comes from FABTRAIN_TEST_DEVICE (cpu when unset): the suite runs these on CPU over
// Gloo; scripts/gpu-check runs each with FABTRAIN_TEST_DEVICE=cuda, where the ranks share one GPU
// over NCCL. NCCL refuses two ranks of one host on one GPU, so there each rank is a host of its own
// (NCCL_HOSTID) joined over NCCL's socket transport on lo, as test_rank_stops_answering.py does.
// Each test records its figures (gtest properties) for gpu-check's summary.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "tests/integration/trainer/checkpoint_weights.h"
#include "tests/integration/trainer/run_support.h"
#include "tests/support/ttar.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/distributed/local_spawn.h"

namespace fs = std::filesystem;

namespace fabkit::testing {
namespace {

std::string test_device() {
  const char* d = std::getenv("FABTRAIN_TEST_DEVICE");
  return d && *d ? d : "cpu";
}

// The GPU the ranks share: the first one this process may use.
std::string shared_gpu() {
  const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
  std::string first = cvd ? std::string(cvd).substr(0, std::string(cvd).find(',')) : "";
  return first.empty() ? "0" : first;
}

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(3);
  s << v;
  return s.str();
}

class OnDevice : public ::testing::Test {
 public:
  OnDevice() : dir_("fabtrain-on-device"), device_(test_device()) {
    write_tiny_model(dir_.path() / "model", false);
    write_token_data(dir_.path() / "train.jsonl", 40, 30, 300);
  }
  void SetUp() override {
    if (device_ != "cpu" && device_ != "cuda") {
      FAIL() << "FABTRAIN_TEST_DEVICE=" << device_ << ": use cpu or cuda";
    }
    if (cuda() && !fs::exists("/dev/nvidia0") && !fs::exists("/dev/nvidiactl")) {
      GTEST_SKIP() << "FABTRAIN_TEST_DEVICE=cuda but no NVIDIA device node (/dev/nvidia0): no GPU "
                      "on this machine";
    }
    RecordProperty("device", device_);
  }
  bool cuda() const { return device_ == "cuda"; }

  std::vector<std::string> base(const std::string& out, int steps,
                                const std::vector<std::string>& more) const {
    std::vector<std::string> a = {"--model",
                                  (dir_.path() / "model").string(),
                                  "--data",
                                  (dir_.path() / "train.jsonl").string(),
                                  "--output",
                                  (dir_.path() / out).string(),
                                  "--max-length",
                                  "16",
                                  "--max-steps",
                                  std::to_string(steps),
                                  "--lr",
                                  "3e-3",
                                  "--warmup-steps",
                                  "1",
                                  "--seed",
                                  "1",
                                  "--collective-timeout-ms",
                                  "30000",
                                  "--rendezvous-timeout-ms",
                                  "60000",
                                  "--no-control",
                                  "--device",
                                  device_};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  fs::path out(const std::string& name) const { return dir_.path() / name; }

  // `world` ranks started by hand, as a launcher would (RANK, WORLD_SIZE, MASTER_*): on CPU they
  // are one host's local ranks over Gloo; on the GPU each is alone on its "host" and all share
  // one GPU. world 1 is a plain process on the same device. The outputs are joined, each under
  // its rank's name; the exit code is the first rank's that failed.
  RunResult run_ranks(const std::vector<std::string>& args, int world, int timeout_s = 240) const {
    const std::string port = std::to_string(trainer::pick_free_port());
    std::vector<Started> started;
    for (int r = 0; r < world; ++r) {
      std::vector<std::string> env = {"OMP_NUM_THREADS=1"};
      if (cuda()) env.push_back("CUDA_VISIBLE_DEVICES=" + shared_gpu());
      if (world > 1) {
        env.insert(env.end(), {"RANK=" + std::to_string(r), "WORLD_SIZE=" + std::to_string(world),
                               "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port});
        if (cuda()) {
          env.insert(env.end(),
                     {"LOCAL_RANK=0", "LOCAL_WORLD_SIZE=1",
                      "NCCL_HOSTID=fabkit-on-device-rank" + std::to_string(r), "NCCL_P2P_DISABLE=1",
                      "NCCL_SHM_DISABLE=1", "NCCL_IB_DISABLE=1", "NCCL_SOCKET_IFNAME=lo"});
        } else {
          env.insert(env.end(), {"LOCAL_RANK=" + std::to_string(r),
                                 "LOCAL_WORLD_SIZE=" + std::to_string(world)});
        }
      }
      started.push_back(start_fabtrain(args, env));
    }
    RunResult all;
    all.exit_code = 0;
    for (int r = 0; r < world; ++r) {
      RunResult one = finish_fabtrain(started[r], timeout_s);
      all.output += "---- rank " + std::to_string(r) + " (exit " + std::to_string(one.exit_code) +
                    ")\n" + one.output;
      if (all.exit_code == 0) all.exit_code = one.exit_code;
      all.seconds = std::max(all.seconds, one.seconds);
    }
    return all;
  }

  // A failed multi-rank run on the GPU: where NCCL refused to make the communicator of two ranks
  // on one GPU, that is this machine's answer (a skip quoting NCCL), not a training failure.
  std::string nccl_refusal(const RunResult& r, const std::string& name) const {
    if (!cuda() || r.exit_code == 0) return "";
    std::string text = r.output;
    for (int rank = 0; rank < 2; ++rank) {
      std::ifstream log(out(name) / "nccl" / ("rank-" + std::to_string(rank) + ".log"));
      std::stringstream ss;
      ss << log.rdbuf();
      text += "\n" + ss.str();
    }
    static const std::regex init(
        R"((?:duplicate gpu|ncclCommInit\w*.*(?:error|fail|invalid))[^\n]*)", std::regex::icase);
    std::smatch m;
    return std::regex_search(text, m, init) ? m.str() : "";
  }

  TempDir dir_;
  std::string device_;
};

// Tolerances (as fabtrain_run_test.cc's): splitting the batch over ranks, or the micro-batches
// over stages, reorders fp32 additions (1e-7 relative per op), and on the GPU so do the atomic adds
// of the embedding's backward; losses then agree to ~1e-6 relative and weights by far less than one
// step (lr 3e-3). A wrong gather, reduce-scatter, offload copy or restore moves them by ~1e-2.
constexpr double kLossRelTol = 1e-4;
constexpr double kWeightTol = 1e-4;

// Compares two loss curves step by step; returns the worst relative difference.
double expect_same_curve(const std::vector<double>& a, const std::vector<double>& b,
                         double rel_tol = kLossRelTol) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    EXPECT_NEAR(a[i], b[i], rel_tol * std::abs(b[i])) << "step " << i + 1;
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::abs(b[i]));
  }
  return worst;
}

// World size 2 with the all-gather prefetch and the reduce-scatter (world 1 bypasses both), fp32,
// the same global batch: 2 ranks of 2 sequences against 1 rank of 4.
TEST_F(OnDevice, TwoRanksSharingOneDeviceMatchOneRankStepByStep) {
  constexpr int kSteps = 5;
  auto one = run_ranks(base("one", kSteps, {"--micro-batch-size", "4"}), 1);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  auto two = run_ranks(base("two", kSteps, {"--micro-batch-size", "2"}), 2);
  if (std::string said = nccl_refusal(two, "two"); !said.empty()) {
    GTEST_SKIP() << "NCCL would not make two ranks on one GPU, each a host of its own: " << said;
  }
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_NE(two.output.find(cuda() ? "backend nccl" : "backend gloo"), std::string::npos)
      << two.output;
  const auto l1 = losses(out("one")), l2 = losses(out("two"));
  ASSERT_EQ(l1.size(), size_t{kSteps});
  EXPECT_LT(l1.back(), l1.front());  // it learns
  const double worst = expect_same_curve(l2, l1);
  const double dw =
      max_weight_diff(checkpoint_weights(out("two"), 1), checkpoint_weights(out("one"), 1));
  EXPECT_LT(dw, kWeightTol);
  RecordProperty("steps", kSteps);
  RecordProperty("worst_loss_rel_diff", fmt(worst));
  RecordProperty("max_weight_diff", fmt(dw));
}

// A sharded checkpoint (2 ranks) saved from the device and resumed onto it: the resumed steps
// repeat the uninterrupted run's.
TEST_F(OnDevice, ShardedCheckpointSavedAndResumedEqualsTheUninterruptedRun) {
  const std::vector<std::string> two = {"--micro-batch-size", "2"};
  auto full = run_ranks(base("full", 6, two), 2);
  if (std::string said = nccl_refusal(full, "full"); !said.empty()) {
    GTEST_SKIP() << "NCCL would not make two ranks on one GPU, each a host of its own: " << said;
  }
  ASSERT_EQ(full.exit_code, 0) << full.output;
  auto args =
      base("split", 6, {"--micro-batch-size", "2", "--save-every", "3", "--save-total-limit", "1"});
  auto stopped = args;
  stopped.insert(stopped.end(), {"--exit-after-steps", "4"});
  auto first = run_ranks(stopped, 2);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_EQ(trainer::list_checkpoints(out("split")).at(0).filename(), "checkpoint-00000003");
  auto second = run_ranks(args, 2);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from step 3"), std::string::npos) << second.output;
  const auto l = losses(out("split")), f = losses(out("full"));
  ASSERT_EQ(l.size(), 7u);  // steps 1-4, then 4-6 again after the resume
  const double worst = expect_same_curve(std::vector<double>(l.begin() + 4, l.end()),
                                         std::vector<double>(f.begin() + 3, f.end()));
  const double dw =
      max_weight_diff(checkpoint_weights(out("full"), 1), checkpoint_weights(out("split"), 1));
  EXPECT_LT(dw, kWeightTol);
  RecordProperty("resumed_from_step", 3);
  RecordProperty("worst_loss_rel_diff", fmt(worst));
  RecordProperty("max_weight_diff", fmt(dw));
}

// --offload-activations in a real step: recompute's checkpointed inputs go to pinned host memory
// and come back on the side stream (on CPU, host to host). The run repeats recompute alone.
TEST_F(OnDevice, OffloadedActivationsRepeatRecomputeAlone) {
  const std::vector<std::string> common = {"--micro-batch-size", "4", "--recompute"};
  auto plain = run_ranks(base("recompute", 4, common), 1);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  auto with = common;
  with.push_back("--offload-activations");
  auto offl = run_ranks(base("offload", 4, with), 1);
  ASSERT_EQ(offl.exit_code, 0) << offl.output;
  EXPECT_NE(offl.output.find(cuda() ? "checkpointed input waits in pinned host memory"
                                    : "saves nothing here"),
            std::string::npos)
      << offl.output;
  const double worst = expect_same_curve(losses(out("offload")), losses(out("recompute")));
  const double dw = max_weight_diff(checkpoint_weights(out("recompute"), 1),
                                    checkpoint_weights(out("offload"), 1));
  EXPECT_LT(dw, kWeightTol);
  RecordProperty("worst_loss_rel_diff", fmt(worst));
  RecordProperty("max_weight_diff", fmt(dw));
}

// float16 compute with its dynamic loss scale: at a scale that does not overflow it tracks the
// fp32 run within fp16's precision; from 4e6 the gradients overflow, the step is skipped and the
// next runs at half the scale, until steps apply.
TEST_F(OnDevice, Float16TracksFloat32AndItsLossScaleBacksOffOnOverflow) {
  const std::vector<std::string> mb = {"--micro-batch-size", "4"};
  auto f32 = run_ranks(base("f32", 5, mb), 1);
  ASSERT_EQ(f32.exit_code, 0) << f32.output;
  auto low = mb;
  low.insert(low.end(), {"--torch-dtype", "float16", "--initial-loss-scale", "1024"});
  auto f16 = run_ranks(base("f16", 5, low), 1);
  ASSERT_EQ(f16.exit_code, 0) << f16.output;
  const auto s16 = steps_of(out("f16"));
  for (const auto& j : s16) EXPECT_FALSE(j["update_skipped"].get<bool>()) << j.dump();
  // fp16 keeps 11 bits of mantissa (bf16 8, held to 2e-2 against fp32 in fabtrain_run_test.cc).
  const double worst = expect_same_curve(losses(out("f16")), losses(out("f32")), 1e-2);

  auto high = mb;
  high.insert(high.end(), {"--torch-dtype", "float16", "--initial-loss-scale", "4e6",
                           "--loss-scale-window", "2"});
  auto over = run_ranks(base("f16-overflow", 8, high), 1);
  ASSERT_EQ(over.exit_code, 0) << over.output;
  const auto s = steps_of(out("f16-overflow"));
  ASSERT_EQ(s.size(), 8u);
  int skips = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool skipped = s[i]["update_skipped"].get<bool>();
    skips += skipped;
    if (skipped && i + 1 < s.size()) {
      EXPECT_EQ(s[i + 1]["loss_scale"].get<double>(), s[i]["loss_scale"].get<double>() / 2)
          << "step " << i + 2;
    }
  }
  EXPECT_GT(skips, 0) << "4e6 x the loss overflows float16 (65504): some step must be skipped";
  EXPECT_LT(skips, 8) << "the halved scale never let a step apply";
  RecordProperty("worst_loss_rel_diff_vs_fp32", fmt(worst));
  RecordProperty("overflow_steps_skipped", skips);
}

// The pipeline engine, 2 stages (one layer each) on one device, fp32, 4 micro-batches of 1 (1F1B)
// against 1 process accumulating the same 4.
TEST_F(OnDevice, PipelineTwoStagesOnOneDeviceEqualOneProcess) {
  constexpr int kSteps = 4;
  auto one = run_ranks(base("one", kSteps, {"--micro-batch-size", "1", "--grad-accum", "4"}), 1);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  auto pp = run_ranks(
      base("pp", kSteps, {"--pp", "2", "--micro-batches", "4", "--micro-batch-size", "1"}), 2);
  if (std::string said = nccl_refusal(pp, "pp"); !said.empty()) {
    GTEST_SKIP() << "NCCL would not make two ranks on one GPU, each a host of its own: " << said;
  }
  ASSERT_EQ(pp.exit_code, 0) << pp.output;
  EXPECT_NE(pp.output.find("layers per stage 1,1"), std::string::npos) << pp.output;
  const auto l1 = losses(out("one"));
  ASSERT_EQ(l1.size(), size_t{kSteps});
  const double worst = expect_same_curve(losses(out("pp")), l1);
  const double dw =
      max_weight_diff(checkpoint_weights(out("pp"), 2), checkpoint_weights(out("one"), 1));
  EXPECT_LT(dw, kWeightTol);
  RecordProperty("steps", kSteps);
  RecordProperty("worst_loss_rel_diff", fmt(worst));
  RecordProperty("max_weight_diff", fmt(dw));
}

// The split backward (zb-h1: the GEMMs' weight gradients wait in a store for the W pass, on the
// device) and interleaved 1F1B (2 chunks per rank, 4 virtual stages), each with 2 ranks sharing
// one device, against 1 process accumulating the same 4 micro-batches of a 4-layer model.
TEST_F(OnDevice, PipelineSchedulesOnOneDeviceEqualOneProcess) {
  constexpr int kSteps = 4;
  write_tiny_model(dir_.path() / "model4", false, 4);
  auto with_model4 = [&](std::vector<std::string> args) {
    args[1] = (dir_.path() / "model4").string();  // after --model
    return args;
  };
  auto one = run_ranks(
      with_model4(base("one4", kSteps, {"--micro-batch-size", "1", "--grad-accum", "4"})), 1);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const auto l1 = losses(out("one4"));
  ASSERT_EQ(l1.size(), size_t{kSteps});
  double worst = 0, dw = 0;
  for (const std::string schedule : {"zb-h1", "interleaved-1f1b"}) {
    SCOPED_TRACE(schedule);
    auto pp = run_ranks(with_model4(base(schedule, kSteps,
                                         {"--pp", "2", "--schedule", schedule, "--micro-batches",
                                          "4", "--micro-batch-size", "1"})),
                        2);
    if (std::string said = nccl_refusal(pp, schedule); !said.empty()) {
      GTEST_SKIP() << "NCCL would not make two ranks on one GPU, each a host of its own: " << said;
    }
    ASSERT_EQ(pp.exit_code, 0) << pp.output;
    worst = std::max(worst, expect_same_curve(losses(out(schedule)), l1));
    const int stages = schedule == "zb-h1" ? 2 : 4;
    dw = std::max(dw, max_weight_diff(checkpoint_weights(out(schedule), stages),
                                      checkpoint_weights(out("one4"), 1)));
    EXPECT_LT(dw, kWeightTol);
  }
  RecordProperty("steps", kSteps);
  RecordProperty("worst_loss_rel_diff", fmt(worst));
  RecordProperty("max_weight_diff", fmt(dw));
}

}  // namespace
}  // namespace fabkit::testing
