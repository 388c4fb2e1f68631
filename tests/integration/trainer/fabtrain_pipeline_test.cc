// fabtrain --pp S end to end: real processes, Gloo over 127.0.0.1, a 4-layer untied model made
// here. A pipelined run (2 and 4 stages, GPipe and 1F1B, with and without data parallel) equals
// the 1-process run on the same global batch; it logs the bytes it sent, the bubble and the
// activations it held (1F1B fewer than GPipe); it resumes from its stage checkpoints; bad flags
// name the value and the fix.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <thread>

#include "tests/integration/trainer/checkpoint_weights.h"
#include "tests/integration/trainer/pipeline_support.h"
#include "tests/integration/trainer/run_support.h"
#include "tests/support/ttar.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/control/control_client.h"

namespace fs = std::filesystem;

namespace fabkit::testing {
namespace {

constexpr int kLayers = 4, kHidden = 32, kSeq = 16;

class FabtrainPipeline : public ::testing::Test {
 public:
  FabtrainPipeline() : dir_("fabtrain-pp") {
    write_tiny_model(dir_.path() / "model", false, kLayers);  // hidden 32 (kHidden), vocab 300
    write_tiny_model(dir_.path() / "tied", true, kLayers);
    write_token_data(dir_.path() / "train.jsonl", 40, 30, 300);
  }
  std::vector<std::string> base(const std::string& out, int steps,
                                const std::vector<std::string>& more) const {
    return pipeline_run_args(dir_.path(), out, steps, kSeq, more);
  }
  fs::path out(const std::string& name) const { return dir_.path() / name; }
  TempDir dir_;
};

TEST_F(FabtrainPipeline, TwoAndFourStagesEqualOneProcessForBothSchedules) {
  constexpr int kM = 8, kSteps = 4;  // M > S: 1F1B holds S micro-batches, GPipe all M
  auto one = run_fabtrain(
      base("one", kSteps, {"--micro-batch-size", "1", "--grad-accum", std::to_string(kM)}));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const auto l1 = losses(out("one"));
  ASSERT_EQ(l1.size(), size_t{kSteps});
  EXPECT_LT(l1.back(), l1.front());  // it learns
  const auto w1 = checkpoint_weights(out("one"), 1);
  for (int stages : {2, 4}) {
    for (const std::string schedule : {"gpipe", "1f1b"}) {
      const std::string name = "pp" + std::to_string(stages) + "-" + schedule;
      SCOPED_TRACE(name);
      auto r = run_fabtrain(
          base(name, kSteps,
               {"--nproc", std::to_string(stages), "--pp", std::to_string(stages), "--schedule",
                schedule, "--micro-batches", std::to_string(kM), "--micro-batch-size", "1"}));
      ASSERT_EQ(r.exit_code, 0) << r.output;
      EXPECT_NE(r.output.find("layers per stage " + std::string(stages == 2 ? "2,2" : "1,1,1,1")),
                std::string::npos)
          << r.output;
      expect_same_curve(losses(out(name)), l1);
      EXPECT_LT(max_weight_diff(checkpoint_weights(out(name), stages), w1), kPipelineWeightTol);
      for (const auto& j : steps_of(out(name))) {
        // Each of the S-1 boundaries carries M activations [1, T, H] forward and M gradients
        // back, as fp32.
        EXPECT_EQ(j["pp_bytes_sent"].get<int64_t>(),
                  int64_t{stages - 1} * 2 * kM * kSeq * kHidden * 4);
        EXPECT_DOUBLE_EQ(j["bubble_fraction"].get<double>(),
                         double(stages - 1) / (kM + stages - 1));
      }
      // Activations held at once on the first stage: all M under GPipe, S under 1F1B.
      EXPECT_EQ(stage_peak(out(name), "pp_stage_peak_micro_batches", 0),
                schedule == "gpipe" ? kM : std::min(stages, kM));
    }
    // Measured: the first stage's activation bytes (heap in use above the step's start) under
    // 1F1B stay below GPipe's, which holds all micro-batches at the turn.
    const std::string p = "pp" + std::to_string(stages) + "-";
    const int64_t gpipe = stage_peak(out(p + "gpipe"), "pp_stage_activation_bytes_peak", 0);
    const int64_t f1b = stage_peak(out(p + "1f1b"), "pp_stage_activation_bytes_peak", 0);
    std::cerr << "[pipeline] S=" << stages << " M=" << kM
              << " stage 0 peak activation bytes: gpipe " << gpipe << ", 1f1b " << f1b << "\n";
    EXPECT_GT(gpipe, 0);
    EXPECT_LT(f1b, gpipe);
  }
}

// bf16 compute: activations and their gradients cross stages as fp32 (exact for bf16 values),
// and 1F1B adds the micro-batches' gradients in the 1-process run's order, so the pipelined run
// repeats the 1-process bf16 run's ops: the fp32 tolerances hold (not bf16's 1e-2).
TEST_F(FabtrainPipeline, Bfloat16PipelineEqualsTheOneProcessBfloat16Run) {
  auto one = run_fabtrain(base(
      "one", 3, {"--micro-batch-size", "1", "--grad-accum", "4", "--torch-dtype", "bfloat16"}));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  auto pp = run_fabtrain(base("pp", 3,
                              {"--nproc", "2", "--pp", "2", "--micro-batches", "4",
                               "--micro-batch-size", "1", "--torch-dtype", "bfloat16"}));
  ASSERT_EQ(pp.exit_code, 0) << pp.output;
  expect_same_curve(losses(out("pp")), losses(out("one")));
  EXPECT_LT(max_weight_diff(checkpoint_weights(out("pp"), 2), checkpoint_weights(out("one"), 1)),
            kPipelineWeightTol);
}

std::vector<double> valid_losses(const fs::path& out) {
  std::vector<double> v;
  for (const auto& j : read_jsonl(out / "metrics.jsonl")) {
    if (j.contains("valid_loss")) v.push_back(j["valid_loss"].get<double>());
  }
  return v;
}

// Validation through the stages (forward only, handed on micro-batch by micro-batch) reports
// the 1-process run's validation losses (same tolerance as the training losses).
TEST_F(FabtrainPipeline, ValidationThroughTheStagesEqualsOneProcess) {
  const std::vector<std::string> eval = {"--valid-split",      "0.2", "--eval-every", "2",
                                         "--micro-batch-size", "1"};
  auto one = run_fabtrain(base("one", 4, eval));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  auto pp = eval;
  pp.insert(pp.end(), {"--nproc", "2", "--pp", "2", "--micro-batches", "1"});
  auto r = run_fabtrain(base("pp", 4, pp));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto v1 = valid_losses(out("one"));
  ASSERT_EQ(v1.size(), 2u);  // steps 2 and 4
  expect_same_curve(valid_losses(out("pp")), v1);
}

// fp16: the dynamic loss scale starts the last stage's backward. With a scale that overflows at
// first (4e6) and a short growth window, the pipelined run skips, halves and grows exactly as the
// 1-process run does, and its losses repeat the 1-process fp16 run's (same ops, as for bf16).
TEST_F(FabtrainPipeline, Float16LossScaleMatchesTheOneProcessRun) {
  const std::vector<std::string> fp16 = {
      "--torch-dtype",       "float16", "--initial-loss-scale", "4e6",
      "--loss-scale-window", "2",       "--micro-batch-size",   "1"};
  auto one_args = fp16;
  one_args.insert(one_args.end(), {"--grad-accum", "2"});
  auto one = run_fabtrain(base("one", 8, one_args));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  auto pp_args = fp16;
  pp_args.insert(pp_args.end(), {"--nproc", "2", "--pp", "2", "--micro-batches", "2"});
  auto pp = run_fabtrain(base("pp", 8, pp_args));
  ASSERT_EQ(pp.exit_code, 0) << pp.output;
  const auto a = steps_of(out("one")), b = steps_of(out("pp"));
  ASSERT_EQ(a.size(), 8u);
  ASSERT_EQ(b.size(), 8u);
  int skips = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i]["loss_scale"].get<double>(), b[i]["loss_scale"].get<double>())
        << "step " << i + 1;
    EXPECT_EQ(a[i]["update_skipped"].get<bool>(), b[i]["update_skipped"].get<bool>())
        << "step " << i + 1;
    skips += b[i]["update_skipped"].get<bool>() ? 1 : 0;
  }
  EXPECT_GT(skips, 0);  // 4e6 overflows fp16 at first
  EXPECT_LT(skips, 8);  // and the halved scale then applies steps
  expect_same_curve(losses(out("pp")), losses(out("one")));
}

TEST_F(FabtrainPipeline, TwoStagesTimesTwoReplicasEqualOneProcess) {
  constexpr int kSteps = 4;
  // Global batch per step: 2 replicas x 2 micro-batches x 1 sequence = the 1-process run's
  // 2 accumulated micro-batches of 2 (the sampler's rank slices make the same union).
  auto one = run_fabtrain(base("one", kSteps, {"--micro-batch-size", "2", "--grad-accum", "2"}));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  for (const std::string schedule : {"gpipe", "1f1b"}) {
    SCOPED_TRACE(schedule);
    auto r = run_fabtrain(
        base("pp2dp2-" + schedule, kSteps,
             {"--nproc", "4", "--pp", "2", "--dp", "2", "--schedule", schedule, "--micro-batches",
              "2", "--micro-batch-size", "1", "--optimizer", "adafactor"}));
    // Adafactor's row/column statistics cross the stage's replicas (its stage communicator).
    auto ref = run_fabtrain(
        base("one-adafactor", kSteps,
             {"--micro-batch-size", "2", "--grad-accum", "2", "--optimizer", "adafactor"}));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_EQ(ref.exit_code, 0) << ref.output;
    EXPECT_NE(r.output.find("2 stages x 2 data-parallel replicas"), std::string::npos) << r.output;
    expect_same_curve(losses(out("pp2dp2-" + schedule)), losses(out("one-adafactor")));
    EXPECT_LT(max_weight_diff(checkpoint_weights(out("pp2dp2-" + schedule), 2),
                              checkpoint_weights(out("one-adafactor"), 1)),
              kPipelineWeightTol);
    fs::remove_all(out("one-adafactor"));
  }
}

TEST_F(FabtrainPipeline, ResumeFromStageCheckpointsEqualsTheUninterruptedRun) {
  const std::vector<std::string> pp = {"--nproc",         "2", "--pp",           "2",
                                       "--micro-batches", "2", "--stage-layers", "1,3"};
  auto full = run_fabtrain(base("full", 6, pp));
  ASSERT_EQ(full.exit_code, 0) << full.output;
  EXPECT_NE(full.output.find("layers per stage 1,3 (--stage-layers)"), std::string::npos)
      << full.output;
  auto args = base("split", 6, pp);
  args.insert(args.end(), {"--save-every", "3", "--save-total-limit", "1"});
  auto stopped = args;
  stopped.insert(stopped.end(), {"--exit-after-steps", "4"});
  auto first = run_fabtrain(stopped);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  for (int s = 0; s < 2; ++s) {
    ASSERT_EQ(trainer::list_checkpoints(stage_dir(out("split"), s, 2)).at(0).filename(),
              "checkpoint-00000003");
  }
  // Another pipeline degree cannot take these checkpoints: refused by name, nothing trained.
  auto other =
      run_fabtrain(base("split", 6, {"--nproc", "4", "--pp", "4", "--micro-batches", "2"}));
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.output.find("holds checkpoints of a run with 2 pipeline stages (--pp x "
                              "--virtual-stages); resuming them with 4 stages is not supported"),
            std::string::npos)
      << other.output;
  auto second = run_fabtrain(args);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from step 3"), std::string::npos) << second.output;
  auto l = losses(out("split")), f = losses(out("full"));
  ASSERT_EQ(l.size(), 7u);  // steps 1-4, then 4-6 again after the resume
  expect_same_curve(std::vector<double>(l.begin() + 4, l.end()),
                    std::vector<double>(f.begin() + 3, f.end()));
  EXPECT_LT(
      max_weight_diff(checkpoint_weights(out("full"), 2), checkpoint_weights(out("split"), 2)),
      1e-6);  // same ops, same order
}

// SIGTERM to a pipeline job (the --nproc parent forwards it): every rank agrees on the stop step
// over the world, every stage checkpoints that step, and the job exits 0.
TEST_F(FabtrainPipeline, SigtermStopsEveryStageAtOneStepWithACheckpoint) {
  setenv("FABTRAIN_CONTROL_DIR", (dir_.path() / "ctl").c_str(), 1);
  Started job =
      start_fabtrain(base("term", 100000, {"--nproc", "2", "--pp", "2", "--micro-batches", "2"}));
  unsetenv("FABTRAIN_CONTROL_DIR");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline &&
         (!fs::exists(out("term") / "metrics.jsonl") || steps_of(out("term")).size() < 2)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(steps_of(out("term")).size(), 2u);
  ASSERT_EQ(kill(job.pid, SIGTERM), 0);
  RunResult done = finish_fabtrain(job, 120);
  ASSERT_EQ(done.exit_code, 0) << done.output;
  EXPECT_NE(done.output.find("stop requested (SIGTERM)"), std::string::npos) << done.output;
  const auto c0 = trainer::list_checkpoints(stage_dir(out("term"), 0, 2));
  const auto c1 = trainer::list_checkpoints(stage_dir(out("term"), 1, 2));
  ASSERT_EQ(c0.size(), 1u);
  ASSERT_EQ(c1.size(), 1u);
  EXPECT_EQ(c0[0].filename(), c1[0].filename());
}

// The pipeline runs through the one training loop, so what the loop does holds for it too
// (each of these did not at --pp > 1 before the loop was shared).

// `--trace-steps` writes a Chrome trace per rank of the third step, as at --pp 1.
TEST_F(FabtrainPipeline, TraceStepsWritesAChromeTracePerStage) {
  auto r = run_fabtrain(base(
      "trace", 4, {"--nproc", "2", "--pp", "2", "--micro-batches", "2", "--trace-steps", "1"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"rank-0-step-3.json", "rank-1-step-3.json"}) {
    EXPECT_TRUE(fs::exists(out("trace") / "trace" / f)) << f << "\n" << r.output;
  }
}

// A resume at another micro-batch size lands inside a batch: the examples seen again are named.
TEST_F(FabtrainPipeline, ResumeInsideABatchWarnsOfTheReplayedExamples) {
  const std::vector<std::string> pp = {"--nproc", "2", "--pp", "2", "--micro-batches", "2"};
  auto first_args = base("replay", 6, pp);
  first_args.insert(first_args.end(),
                    {"--micro-batch-size", "1", "--save-every", "3", "--exit-after-steps", "3"});
  auto first = run_fabtrain(first_args);  // checkpoint at step 3: 6 examples into the epoch
  ASSERT_EQ(first.exit_code, 0) << first.output;
  auto second_args = base("replay", 4, pp);
  second_args.insert(second_args.end(), {"--micro-batch-size", "4"});
  auto second = run_fabtrain(second_args);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from step 3"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("2 examples before the checkpoint are seen again"),
            std::string::npos)
      << second.output;
}

// While the stages write a checkpoint, `fabtrain control status` says "saving" (polled over the
// job's socket during a run that saves every step; before, a pipeline save said "training").
TEST_F(FabtrainPipeline, ControlStatusSaysSavingWhileTheStagesSave) {
  const fs::path ctl = dir_.path() / "ctl";
  setenv("FABTRAIN_CONTROL_DIR", ctl.c_str(), 1);
  Started job = start_fabtrain(base("saving", 40,
                                    {"--nproc", "2", "--pp", "2", "--micro-batches", "2",
                                     "--save-every", "1", "--save-total-limit", "1"}));
  unsetenv("FABTRAIN_CONTROL_DIR");
  const fs::path socket = ctl / "saving.sock";
  std::map<std::string, int> phases;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(200);
  bool was_up = false;  // the socket goes with the job: gone after it was up = the job ended
  while (phases["saving"] == 0 && std::chrono::steady_clock::now() < deadline) {
    if (!fs::exists(socket)) {
      if (was_up) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    was_up = true;
    try {
      const Json j = trainer::control::request(socket.string(), "status", 2000);
      if (j.contains("status")) ++phases[j["status"].value("phase", "?")];
    } catch (const std::exception&) {
      // The socket comes and goes with the job.
    }
  }
  kill(job.pid, SIGTERM);
  RunResult done = finish_fabtrain(job, 120);
  std::string seen;
  for (const auto& [phase, n] : phases) seen += phase + " x" + std::to_string(n) + " ";
  EXPECT_GT(phases["saving"], 0) << "phases seen: " << seen << "\n" << done.output;
}

// `fabtrain export` given one stage's checkpoint gathers the same step of every stage: the
// safetensors file holds every parameter of the model (header + 4 bytes per parameter).
TEST_F(FabtrainPipeline, ExportOfAStageCheckpointHoldsTheWholeModel) {
  auto r = run_fabtrain(base("exp", 2, {"--nproc", "2", "--pp", "2", "--micro-batches", "2"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path ckpt = trainer::list_checkpoints(stage_dir(out("exp"), 1, 2)).at(0);
  auto e = run_fabtrain({"export", "--checkpoint", ckpt.string(), "--out", out("hf").string()});
  ASSERT_EQ(e.exit_code, 0) << e.output;
  uint64_t numel = 0;
  for (const auto& [name, values] : checkpoint_weights(out("exp"), 2)) numel += values.size();
  std::ifstream st(out("hf") / "model.safetensors", std::ios::binary);
  uint64_t header = 0;
  st.read(reinterpret_cast<char*>(&header), 8);
  EXPECT_EQ(fs::file_size(out("hf") / "model.safetensors"), 8 + header + 4 * numel);
  // A missing stage is named, not exported as a partial model.
  fs::remove_all(stage_dir(out("exp"), 0, 2));
  auto partial =
      run_fabtrain({"export", "--checkpoint", ckpt.string(), "--out", out("hf2").string()});
  EXPECT_EQ(partial.exit_code, 2) << partial.output;
  EXPECT_NE(partial.output.find("is stage 1 of a 2-stage pipeline run"), std::string::npos)
      << partial.output;
}

TEST_F(FabtrainPipeline, BadFlagsNameTheValueAndTheFix) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::string tied = (dir_.path() / "tied").string();
  const std::vector<Case> cases = {
      {{"--micro-batches", "4"},
       "--micro-batches 4 splits a pipeline's batch, but --pp is 1: use --grad-accum 4"},
      {{"--pp", "2"},
       "data-parallel degree 1 x pipeline degree 2 = 2 does not match the world size 1"},
      {{"--nproc", "2", "--pp", "2", "--schedule", "zigzag"},
       "--schedule zigzag is not a pipeline schedule"},
      {{"--nproc", "2", "--pp", "2", "--stage-layers", "1,2"},
       "--stage-layers 1,2 sums to 3 layers but the model has 4"},
      {{"--nproc", "2", "--pp", "2", "--grad-accum", "2"}, "use --micro-batches 4"},
      {{"--nproc", "2", "--pp", "2", "TIED"}, "tie_word_embeddings false"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    const bool use_tied = args.back() == "TIED";
    if (use_tied) args.pop_back();
    args = base("bad", 2, args);
    if (use_tied) args[1] = tied;  // after --model
    auto r = run_fabtrain(args);
    // One process exits 2 itself; under --nproc the parent names the rank that exited 2.
    EXPECT_NE(r.exit_code, 0) << r.output;
    if (std::find(c.args.begin(), c.args.end(), "--nproc") == c.args.end()) {
      EXPECT_EQ(r.exit_code, 2) << r.output;
    }
    EXPECT_NE(r.output.find(c.message), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace fabkit::testing
