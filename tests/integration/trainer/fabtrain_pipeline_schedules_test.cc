// fabtrain's interleaved 1F1B and zero-bubble (ZB-H1) pipeline schedules end to end: real
// processes, Gloo over 127.0.0.1, an 8-layer untied model made here (8 virtual stages need 8
// layers). Each schedule equals the 1-process run on the same global batch at 2 and 4 ranks
// (interleaved with 2 chunks per rank); checkpoints resume across a schedule change over the same
// virtual stages; a rank killed mid-schedule is named; --dry-run prints the timeline.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/integration/trainer/checkpoint_weights.h"
#include "tests/integration/trainer/pipeline_support.h"
#include "tests/integration/trainer/run_support.h"
#include "tests/support/ttar.h"
#include "trainer/checkpoint/checkpoint.h"

namespace fs = std::filesystem;

namespace fabkit::testing {
namespace {

constexpr int kLayers = 8, kHidden = 32, kSeq = 16;

class FabtrainSchedules : public ::testing::Test {
 public:
  FabtrainSchedules() : dir_("fabtrain-pp-sched") {
    write_tiny_model(dir_.path() / "model", false, kLayers);  // hidden 32 (kHidden), vocab 300
    write_token_data(dir_.path() / "train.jsonl", 40, 30, 300);
  }
  std::vector<std::string> base(const std::string& out, int steps,
                                const std::vector<std::string>& more) const {
    return pipeline_run_args(dir_.path(), out, steps, kSeq, more);
  }
  fs::path out(const std::string& name) const { return dir_.path() / name; }
  TempDir dir_;
};

// The bytes of a run's TensorBoard event files (text summaries are stored verbatim).
std::string tensorboard_bytes(const fs::path& out) {
  std::string all;
  if (!fs::is_directory(out / "tensorboard")) return all;
  for (const auto& e : fs::directory_iterator(out / "tensorboard")) {
    std::ifstream f(e.path(), std::ios::binary);
    all.append(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  return all;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) out.push_back(part);
  return out;
}

TEST_F(FabtrainSchedules, InterleavedAndZeroBubbleEqualOneProcessAtTwoAndFourRanks) {
  constexpr int kM = 8, kSteps = 4;
  auto one = run_fabtrain(
      base("one", kSteps, {"--micro-batch-size", "1", "--grad-accum", std::to_string(kM)}));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const auto l1 = losses(out("one"));
  ASSERT_EQ(l1.size(), size_t{kSteps});
  EXPECT_LT(l1.back(), l1.front());
  const auto w1 = checkpoint_weights(out("one"), 1);
  for (int ranks : {2, 4}) {
    for (const std::string schedule : {"interleaved-1f1b", "zb-h1"}) {
      const int chunks = schedule == "zb-h1" ? 1 : 2, stages = ranks * chunks;
      const std::string name = "pp" + std::to_string(ranks) + "-" + schedule;
      SCOPED_TRACE(name);
      std::vector<std::string> args = {"--nproc",
                                       std::to_string(ranks),
                                       "--pp",
                                       std::to_string(ranks),
                                       "--schedule",
                                       schedule,
                                       "--micro-batches",
                                       std::to_string(kM),
                                       "--micro-batch-size",
                                       "1"};
      if (chunks > 1) args.insert(args.end(), {"--virtual-stages", std::to_string(chunks)});
      auto r = run_fabtrain(base(name, kSteps, args));
      ASSERT_EQ(r.exit_code, 0) << r.output;
      // The layers split over every virtual stage (the balance counts the embedding and head,
      // so the counts need not be equal).
      std::smatch split;
      const std::string output = r.output;
      ASSERT_TRUE(
          std::regex_search(output, split,
                            std::regex(std::string("layers per ") + (chunks > 1 ? "virtual " : "") +
                                       "stage ([0-9,]+) \\(balanced")))
          << r.output;
      int counted = 0, layers = 0;
      for (const std::string& n : split_commas(split[1].str())) {
        ++counted;
        layers += std::stoi(n);
      }
      EXPECT_EQ(counted, stages);
      EXPECT_EQ(layers, kLayers);
      expect_same_curve(losses(out(name)), l1);
      // Rank 0's TensorBoard holds the schedule as --dry-run prints it (a text summary; its
      // encoding is read back with tensorboard's own reader in tests/unit/trainer_monitor).
      EXPECT_NE(tensorboard_bytes(out(name)).find("pipeline schedule " + schedule + ": " +
                                                  std::to_string(ranks) + " ranks"),
                std::string::npos);
      // Each virtual stage saved its own units: the stages' checkpoints hold the whole model.
      EXPECT_LT(max_weight_diff(checkpoint_weights(out(name), stages), w1), kPipelineWeightTol);
      for (const auto& j : steps_of(out(name))) {
        // Every one of the P x V - 1 boundaries carries M activations [1, T, H] forward and M
        // gradients back, as fp32 (interleaved: also the boundaries from the last rank back to
        // the first).
        EXPECT_EQ(j["pp_bytes_sent"].get<int64_t>(),
                  int64_t{stages - 1} * 2 * kM * kSeq * kHidden * 4);
        EXPECT_EQ(j["pp_virtual_stages"].get<int>(), stages);
        EXPECT_EQ(j["pp_schedule"].get<std::string>(), schedule);
        const double one_f_one_b = double(ranks - 1) / (kM + ranks - 1);
        if (chunks > 1) {
          EXPECT_DOUBLE_EQ(j["bubble_fraction"].get<double>(),
                           double(ranks - 1) / (chunks * kM + ranks - 1));
        } else {
          EXPECT_LT(j["bubble_fraction"].get<double>(), one_f_one_b / 2);
        }
        for (const auto& idle : j["pp_stage_idle_fraction"]) {
          EXPECT_GE(idle.get<double>(), 0.0);
          EXPECT_LT(idle.get<double>(), 1.0);
        }
      }
      // Activations held at once on the first rank: ZB-H1 as 1F1B (P, its point); interleaved
      // Megatron's warm-up, (P-1) x 2 + (V-1) x P forwards, plus the one of the first 1F1B pair.
      const int64_t expected =
          chunks == 1 ? std::min(ranks, kM)
                      : std::min(kM * chunks, (ranks - 1) * 2 + (chunks - 1) * ranks + 1);
      EXPECT_EQ(stage_peak(out(name), "pp_stage_peak_micro_batches", 0), expected);
    }
  }
}

// Data-parallel replicas inside each stage: the split backward reduces each micro-batch's
// gradients over the stage's replicas after its W pass, and interleaved chunks share the stage's
// communicator; both equal the 1-process run.
TEST_F(FabtrainSchedules, WithDataParallelReplicasEveryScheduleEqualsOneProcess) {
  constexpr int kSteps = 3;
  auto one = run_fabtrain(base("one", kSteps, {"--micro-batch-size", "2", "--grad-accum", "2"}));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  for (const std::string schedule : {"interleaved-1f1b", "zb-h1"}) {
    SCOPED_TRACE(schedule);
    const std::string name = "pp2dp2-" + schedule;
    auto r = run_fabtrain(base(name, kSteps,
                               {"--nproc", "4", "--pp", "2", "--dp", "2", "--schedule", schedule,
                                "--micro-batches", "2", "--micro-batch-size", "1"}));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("2 stages x 2 data-parallel replicas"), std::string::npos) << r.output;
    expect_same_curve(losses(out(name)), losses(out("one")));
    EXPECT_LT(max_weight_diff(checkpoint_weights(out(name), schedule == "zb-h1" ? 2 : 4),
                              checkpoint_weights(out("one"), 1)),
              kPipelineWeightTol);
  }
}

// Checkpoints are per virtual stage, so a run with another schedule over the same virtual stages
// resumes them: 1F1B on 4 ranks stops after step 4 (checkpoint at 3), interleaved 1F1B on 2 ranks
// x 2 chunks resumes at step 3 and ends where the uninterrupted 1F1B run ends. Another count of
// virtual stages is refused by name.
TEST_F(FabtrainSchedules, ResumeAcrossAScheduleChangeEqualsTheUninterruptedRun) {
  const std::vector<std::string> f1b = {"--nproc", "4", "--pp", "4", "--micro-batches", "4"};
  auto full = run_fabtrain(base("full", 6, f1b));
  ASSERT_EQ(full.exit_code, 0) << full.output;
  auto first_args = base("switch", 6, f1b);
  first_args.insert(first_args.end(), {"--save-every", "3", "--exit-after-steps", "4"});
  auto first = run_fabtrain(first_args);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  for (int s = 0; s < 4; ++s) {
    ASSERT_EQ(trainer::list_checkpoints(stage_dir(out("switch"), s, 4)).at(0).filename(),
              "checkpoint-00000003");
  }
  auto other =
      run_fabtrain(base("switch", 6, {"--nproc", "2", "--pp", "2", "--micro-batches", "4"}));
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.output.find("holds checkpoints of a run with 4 pipeline stages"),
            std::string::npos)
      << other.output;
  auto second = run_fabtrain(base("switch", 6,
                                  {"--nproc", "2", "--pp", "2", "--schedule", "interleaved-1f1b",
                                   "--virtual-stages", "2", "--micro-batches", "4"}));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from step 3"), std::string::npos) << second.output;
  const auto l = losses(out("switch")), f = losses(out("full"));
  ASSERT_EQ(l.size(), 7u);  // steps 1-4, then 4-6 again after the resume
  expect_same_curve(std::vector<double>(l.begin() + 4, l.end()),
                    std::vector<double>(f.begin() + 3, f.end()));
  EXPECT_LT(
      max_weight_diff(checkpoint_weights(out("full"), 4), checkpoint_weights(out("switch"), 4)),
      kPipelineWeightTol);
}

// The environment of a process, as NAME=value strings.
std::vector<std::string> environ_of(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::vector<std::string> out;
  for (std::string s; std::getline(f, s, '\0');) out.push_back(s);
  return out;
}

// The --nproc parent's rank process with RANK=rank, or -1.
int rank_pid(int parent, int rank) {
  std::ifstream f("/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) +
                  "/children");
  for (int pid; f >> pid;) {
    const auto env = environ_of(pid);
    if (std::find(env.begin(), env.end(), "RANK=" + std::to_string(rank)) != env.end()) return pid;
  }
  return -1;
}

// A rank SIGKILLed in the middle of an interleaved schedule: the job ends (nothing waits forever
// on the dead rank's transfers) with a non-zero exit, and the output names the rank and the signal.
TEST_F(FabtrainSchedules, ARankKilledMidScheduleIsNamed) {
  Started job = start_fabtrain(base(
      "killed", 100000,
      {"--nproc", "4", "--pp", "4", "--schedule", "interleaved-1f1b", "--micro-batches", "8"}));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline &&
         (!fs::exists(out("killed") / "metrics.jsonl") || steps_of(out("killed")).size() < 2)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GE(steps_of(out("killed")).size(), 2u);
  const int victim = rank_pid(job.pid, 2);
  ASSERT_GT(victim, 0);
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  RunResult done = finish_fabtrain(job, 120);
  EXPECT_NE(done.exit_code, 0) << done.output;
  EXPECT_NE(done.output.find("rank 2 (pid " + std::to_string(victim) + ") was killed by signal 9"),
            std::string::npos)
      << done.output;
}

TEST_F(FabtrainSchedules, DryRunPrintsTheTimelineAndRefusesBadShapes) {
  const fs::path html = dir_.path() / "timeline.html";
  auto r = run_fabtrain(base("dry", 1,
                             {"--pp", "4", "--schedule", "interleaved-1f1b", "--micro-batches", "8",
                              "--dry-run", "--timeline-html", html.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("pipeline schedule interleaved-1f1b: 4 ranks, 8 micro-batches, 2 model "
                          "chunks per rank (8 virtual stages)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("bubble"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out("dry")));  // nothing ran, nothing was written but the page
  std::ifstream page(html);
  const std::string text((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("<html"), std::string::npos);
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--pp", "4", "--schedule", "interleaved-1f1b", "--micro-batches", "6"}, "multiple of"},
      {{"--pp", "2", "--schedule", "1f1b", "--virtual-stages", "2"},
       "--virtual-stages 2 needs --schedule interleaved-1f1b"},
      // Not a dry run: each of the 2 ranks refuses it (the parent passes the exit on).
      {{"--nproc", "2", "--pp", "2", "--timeline-html", html.string()}, "is written by --dry-run"},
      {{"--virtual-stages", "2"}, "but --pp is 1: set --pp"},
  };
  for (const Case& c : cases) {
    auto args = c.args;
    args.push_back("--dry-run");
    if (c.message == "is written by --dry-run") args.pop_back();
    auto bad = run_fabtrain(base("bad", 1, args));
    EXPECT_EQ(bad.exit_code, 2) << bad.output;
    EXPECT_NE(bad.output.find(c.message), std::string::npos) << bad.output;
  }
}

}  // namespace
}  // namespace fabkit::testing
