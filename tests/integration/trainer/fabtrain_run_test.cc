// fabtrain end to end on this machine: 1 vs 2 Gloo ranks (equivalence), stop + resume, a rank
// killed with SIGKILL, export, and bad inputs.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/integration/trainer/run_support.h"
#include "tests/support/ttar.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/distributed/local_spawn.h"

namespace fs = std::filesystem;

namespace fabkit::testing {
namespace {

class Fabtrain : public ::testing::Test {
 public:
  Fabtrain() : dir_("fabtrain") {
    write_tiny_model(dir_.path() / "model", false);
    write_token_data(dir_.path() / "train.jsonl", 40, 30, 300);
    // Each test's jobs register their control sockets in its own directory, not the machine's.
    setenv("FABTRAIN_CONTROL_DIR", (dir_.path() / "ctl").c_str(), 1);
  }
  std::vector<std::string> base(const std::string& out, int steps) const {
    return {"--model", (dir_.path() / "model").string(), "--data", (dir_.path() / "train.jsonl").string(),
            "--output", (dir_.path() / out).string(), "--max-length", "16", "--max-steps", std::to_string(steps),
            "--lr", "3e-3", "--warmup-steps", "1", "--seed", "1", "--collective-timeout-ms", "20000",
            // These tests are about Gloo ranks on CPU: on a GPU machine --device auto would take the GPU.
            "--device", "cpu"};
  }
  static std::vector<std::string> plus(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  fs::path out(const std::string& name) const { return dir_.path() / name; }
  ~Fabtrain() override { unsetenv("FABTRAIN_CONTROL_DIR"); }
  TempDir dir_;
};

// Largest |a-b| over all parameters of the newest checkpoints of two runs.
double max_weight_diff(const fs::path& a, const fs::path& b) {
  auto ga = trainer::gather_checkpoint(trainer::list_checkpoints(a).at(0));
  auto gb = trainer::gather_checkpoint(trainer::list_checkpoints(b).at(0));
  EXPECT_EQ(ga.params.size(), gb.params.size());
  double worst = 0;
  for (size_t i = 0; i < ga.params.size(); ++i) {
    EXPECT_EQ(ga.params[i].first, gb.params[i].first);
    const auto& x = ga.params[i].second.values;
    const auto& y = gb.params[i].second.values;
    EXPECT_EQ(x.size(), y.size());
    for (size_t k = 0; k < x.size() && k < y.size(); ++k) worst = std::max(worst, std::abs(double(x[k]) - y[k]));
  }
  return worst;
}

// Tolerances: the 2-rank run sums two half-batch gradients through Gloo where the 1-process run
// sums inside one matmul; that reorders fp32 additions (relative 1e-7 per op). Losses then agree
// to ~1e-6 relative; AdamW divides by sqrt(v), which amplifies gradient noise only where |g| is
// near eps, so weights move apart by far less than one step (lr = 3e-3): we allow 1e-4.
constexpr double kLossRelTol = 1e-4;
constexpr double kWeightTol = 1e-4;

void expect_same_curve(const std::vector<double>& a, const std::vector<double>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], kLossRelTol * std::abs(b[i])) << "step " << i + 1;
}

TEST_F(Fabtrain, TwoShardedRanksEqualOneProcessOnTheSameGlobalBatch) {
  auto one = run_fabtrain(plus(base("one", 5), {"--micro-batch-size", "4"}));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  auto two = run_fabtrain(plus(base("two", 5), {"--nproc", "2", "--micro-batch-size", "2"}));
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_NE(two.output.find("backend gloo"), std::string::npos) << two.output;
  auto l1 = losses(out("one")), l2 = losses(out("two"));
  ASSERT_EQ(l1.size(), 5u);
  EXPECT_LT(l1.back(), l1.front());  // it learns
  expect_same_curve(l2, l1);
  EXPECT_LT(max_weight_diff(out("one"), out("two")), kWeightTol);
}

TEST_F(Fabtrain, AdafactorWithAccumulationAndRecomputeEqualsOneProcess) {
  auto one = run_fabtrain(plus(base("one", 4), {"--micro-batch-size", "4", "--optimizer", "adafactor"}));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  auto two = run_fabtrain(plus(base("two", 4), {"--nproc", "2", "--micro-batch-size", "1", "--grad-accum", "2",
                                                "--recompute", "--optimizer", "adafactor"}));
  ASSERT_EQ(two.exit_code, 0) << two.output;
  expect_same_curve(losses(out("two")), losses(out("one")));
  EXPECT_LT(max_weight_diff(out("one"), out("two")), kWeightTol);
}

TEST_F(Fabtrain, ResumeAfterAStopEqualsTheUninterruptedRun) {
  auto full = run_fabtrain(plus(base("full", 6), {"--nproc", "2", "--micro-batch-size", "2"}));
  ASSERT_EQ(full.exit_code, 0) << full.output;
  auto args = plus(base("split", 6), {"--nproc", "2", "--micro-batch-size", "2", "--save-every", "3", "--save-total-limit", "1"});
  auto first = run_fabtrain(plus(args, {"--exit-after-steps", "4"}));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_EQ(trainer::list_checkpoints(out("split")).at(0).filename(), "checkpoint-00000003");
  auto second = run_fabtrain(args);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from step 3"), std::string::npos) << second.output;
  // metrics.jsonl holds steps 1-4 of the first process, then 4-6 again after the resume.
  auto l = losses(out("split"));
  auto f = losses(out("full"));
  ASSERT_EQ(l.size(), 7u);
  std::vector<double> resumed(l.begin() + 4, l.end());
  expect_same_curve(resumed, std::vector<double>(f.begin() + 3, f.end()));
  EXPECT_LT(max_weight_diff(out("full"), out("split")), 1e-6);  // same ops in the same order
  EXPECT_EQ(trainer::list_checkpoints(out("split")).size(), 1u);  // --save-total-limit 1
}

std::vector<double> metric(const fs::path& out, const char* name) {
  std::vector<double> v;
  for (const auto& j : read_jsonl(out / "metrics.jsonl")) {
    if (j.contains("loss")) v.push_back(j[name].is_null() ? std::nan("") : j[name].get<double>());
  }
  return v;
}

// Mixed precision: bf16 parameters and activations, fp32 master weights, optimizer state and
// gradient reduction. The bf16 runs (1 process, and 2 sharded ranks, whose gradients are reduced
// in fp32 after the cast) track the fp32 run within bf16's precision (8 bits of mantissa), and
// differ from it at all (so bf16 really computed).
TEST_F(Fabtrain, Bfloat16ComputeWithFp32MasterWeightsTracksFloat32) {
  auto f32 = run_fabtrain(plus(base("f32", 5), {"--micro-batch-size", "4"}));
  ASSERT_EQ(f32.exit_code, 0) << f32.output;
  auto b16 = run_fabtrain(plus(base("b16", 5), {"--micro-batch-size", "4", "--torch-dtype", "bfloat16"}));
  ASSERT_EQ(b16.exit_code, 0) << b16.output;
  EXPECT_NE(b16.output.find("precision: compute bfloat16; master weights and optimizer state float32; gradient reduction float32"),
            std::string::npos) << b16.output;
  auto b16x2 = run_fabtrain(plus(base("b16x2", 5), {"--nproc", "2", "--micro-batch-size", "2", "--torch-dtype", "bfloat16"}));
  ASSERT_EQ(b16x2.exit_code, 0) << b16x2.output;
  const auto l32 = losses(out("f32"));
  const auto g32 = metric(out("f32"), "grad_norm");
  for (const char* run : {"b16", "b16x2"}) {
    const auto l = losses(out(run));
    const auto g = metric(out(run), "grad_norm");
    ASSERT_EQ(l.size(), l32.size()) << run;
    for (size_t i = 0; i < l.size(); ++i) {
      EXPECT_NEAR(l[i], l32[i], 1e-2 * l32[i]) << run << " step " << i + 1;
      EXPECT_NEAR(g[i], g32[i], 5e-2 * g32[i]) << run << " step " << i + 1;
    }
    // AdamW moves every weight by about lr per step whatever |g| is, so where a gradient is
    // near zero bf16 rounding can flip the step's sign: weights can then differ by up to
    // 2 * lr per step (2 * 3e-3 * 5 = 3e-2); the losses and gradient norms above are the tight checks.
    const double d = max_weight_diff(out("f32"), out(run));
    EXPECT_GT(d, 0.0) << run << ": identical to fp32, so bf16 did not compute";
    EXPECT_LT(d, 3e-2) << run;
  }
}

// fp16 with dynamic loss scaling: a scale that overflows fp16 makes the step's gradients
// non-finite; the update is skipped (on every rank) and the scale halved; after `window` finite
// steps it doubles. Applied steps report the unscaled gradient norm, as the fp32 run does.
TEST_F(Fabtrain, Float16LossScaleSkipsOverflowsHalvesAndGrows) {
  auto f32 = run_fabtrain(plus(base("f32", 10), {"--nproc", "2", "--micro-batch-size", "2"}));
  ASSERT_EQ(f32.exit_code, 0) << f32.output;
  auto f16 = run_fabtrain(plus(base("f16", 10), {"--nproc", "2", "--micro-batch-size", "2", "--torch-dtype", "float16",
                                                 "--initial-loss-scale", "4e6", "--loss-scale-window", "2"}));
  ASSERT_EQ(f16.exit_code, 0) << f16.output;
  EXPECT_NE(f16.output.find("update skipped, loss scale now"), std::string::npos) << f16.output;
  const auto scale = metric(out("f16"), "loss_scale");
  const auto g = metric(out("f16"), "grad_norm");
  const auto g32 = metric(out("f32"), "grad_norm");
  std::vector<bool> skipped;
  for (const auto& j : read_jsonl(out("f16") / "metrics.jsonl")) {
    if (j.contains("loss")) skipped.push_back(j["update_skipped"].get<bool>());
  }
  ASSERT_EQ(scale.size(), 10u);
  ASSERT_EQ(skipped.size(), 10u);
  int applied = 0, skips = 0, good = 0;
  for (size_t i = 0; i < scale.size(); ++i) {
    if (skipped[i]) {
      ++skips;
      good = 0;
      EXPECT_TRUE(std::isnan(g[i])) << "step " << i + 1;
      if (i + 1 < scale.size()) EXPECT_EQ(scale[i + 1], scale[i] / 2) << "step " << i + 1;
    } else {
      ++applied;
      // Unscaled before clipping and the optimizer: the norm is the fp32 run's, not 4e6 times it.
      EXPECT_NEAR(g[i], g32[i], 0.1 * g32[i]) << "step " << i + 1;
      const bool grows = ++good == 2;
      if (grows) good = 0;
      if (i + 1 < scale.size()) EXPECT_EQ(scale[i + 1], grows ? scale[i] * 2 : scale[i]) << "step " << i + 1;
    }
  }
  EXPECT_GE(skips, 1);
  EXPECT_GE(applied, 3);
}

// Two "nodes" with their own local disks: each rank is launched by hand (as srun would, LOCAL_RANK
// 0 on both) with its own OUTPUT directory standing for the node-local path. Checkpoint, stop,
// resume: with --save-on-each-node each node holds a manifest and its own shard and the resumed
// run equals the uninterrupted one; without it, node 1 has no manifest, so no rank may resume.
struct NodeLocalRun {
  std::vector<RunResult> ranks;
  bool ok() const { return ranks.size() == 2 && ranks[0].exit_code == 0 && ranks[1].exit_code == 0; }
  std::string output() const { return ranks.size() == 2 ? ranks[0].output + ranks[1].output : ""; }
};

NodeLocalRun run_two_nodes(const Fabtrain& t, const std::vector<std::string>& extra) {
  const std::string port = std::to_string(trainer::pick_free_port());
  std::vector<Started> started;
  for (int r = 0; r < 2; ++r) {
    auto args = Fabtrain::plus(t.base("node" + std::to_string(r), 6), {"--micro-batch-size", "2", "--save-every", "3"});
    started.push_back(start_fabtrain(Fabtrain::plus(args, extra),
                                     {"RANK=" + std::to_string(r), "WORLD_SIZE=2", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=1",
                                      "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port}));
  }
  NodeLocalRun run;
  for (auto& s : started) run.ranks.push_back(finish_fabtrain(s));
  return run;
}

TEST_F(Fabtrain, SaveOnEachNodeResumesFromNodeLocalDisks) {
  auto full = run_fabtrain(plus(base("full", 6), {"--nproc", "2", "--micro-batch-size", "2"}));
  ASSERT_EQ(full.exit_code, 0) << full.output;

  auto first = run_two_nodes(*this, {"--save-on-each-node", "--exit-after-steps", "4"});
  ASSERT_TRUE(first.ok()) << first.output();
  for (int r = 0; r < 2; ++r) {
    const fs::path ckpt = out("node" + std::to_string(r)) / "checkpoint-00000003";
    EXPECT_TRUE(fs::exists(ckpt / "manifest.json")) << ckpt;
    EXPECT_TRUE(fs::exists(ckpt / ("rank-0000" + std::to_string(r) + "-of-00002.bin"))) << ckpt;
    EXPECT_FALSE(fs::exists(ckpt / ("rank-0000" + std::to_string(1 - r) + "-of-00002.bin"))) << ckpt;
  }
  auto second = run_two_nodes(*this, {"--save-on-each-node"});
  ASSERT_TRUE(second.ok()) << second.output();
  EXPECT_NE(second.ranks[0].output.find("resumed from step 3"), std::string::npos) << second.output();
  auto l = losses(out("node0"));
  auto f = losses(out("full"));
  ASSERT_EQ(l.size(), 7u);  // steps 1-4, then 4-6 after the resume
  expect_same_curve(std::vector<double>(l.begin() + 4, l.end()), std::vector<double>(f.begin() + 3, f.end()));
}

TEST_F(Fabtrain, WithoutSaveOnEachNodeNodeLocalDisksDoNotResume) {
  auto first = run_two_nodes(*this, {"--exit-after-steps", "4"});
  ASSERT_TRUE(first.ok()) << first.output();
  EXPECT_TRUE(fs::exists(out("node0") / "checkpoint-00000003" / "manifest.json"));
  EXPECT_FALSE(fs::exists(out("node1") / "checkpoint-00000003" / "manifest.json"));
  // node1's shards were written where no manifest will ever vouch for them: not left behind.
  EXPECT_FALSE(fs::exists(out("node1") / ".checkpoint-00000003.saving"));
  auto second = run_two_nodes(*this, {});
  ASSERT_TRUE(second.ok()) << second.output();
  EXPECT_EQ(second.output().find("resumed from step"), std::string::npos) << second.output();
  EXPECT_NE(second.output().find("skipping checkpoint"), std::string::npos) << second.output();
}

// Write, kill, resume: the whole job is SIGKILLed while it checkpoints every step (so the kill
// may land inside a checkpoint); the rerun resumes from the newest complete checkpoint and ends
// where the uninterrupted run ends.
TEST_F(Fabtrain, KilledWhileCheckpointingResumesFromTheNewestCompleteOne) {
  auto full = run_fabtrain(plus(base("full", 8), {"--nproc", "2", "--micro-batch-size", "2"}));
  ASSERT_EQ(full.exit_code, 0) << full.output;
  const auto args = plus(base("killed", 8), {"--nproc", "2", "--micro-batch-size", "2", "--save-every", "1"});
  Started s = start_fabtrain(args);
  bool two_saved = false;
  for (int i = 0; i < 2400 && !two_saved; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    two_saved = trainer::list_checkpoints(out("killed")).size() >= 2;
  }
  kill(-s.pid, SIGKILL);
  auto killed = finish_fabtrain(s, 30);
  ASSERT_TRUE(two_saved) << killed.output;
  ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << killed.output;
  const auto complete = trainer::list_checkpoints(out("killed"));
  ASSERT_FALSE(complete.empty());
  const std::string newest = complete.front().filename().string();
  const int newest_step = std::stoi(newest.substr(11));

  auto resumed = run_fabtrain(args);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from step " + std::to_string(newest_step)), std::string::npos)
      << "newest complete: " << newest << "\n" << resumed.output;
  EXPECT_LT(max_weight_diff(out("full"), out("killed")), 1e-6);  // same ops in the same order
}

// Durability, seen in the system calls: every file of a checkpoint is fsynced before the rename
// that publishes it, and its directory is fsynced after (common/atomic_file.h says why).
TEST_F(Fabtrain, CheckpointFilesAreFsyncedBeforeTheirRenameAndTheDirectoryAfter) {
  if (std::system("strace -V >/dev/null 2>&1") != 0) GTEST_SKIP() << "strace is not installed (scripts/setup installs it)";
  const fs::path trace = out("strace.log");
  auto args = plus({"-f", "-qq", "-e", "trace=openat,fsync,rename", "-o", trace.string(), FABTRAIN_BIN},
                   plus(base("durable", 2), {"--nproc", "2", "--micro-batch-size", "2"}));
  std::string cmd = "strace";
  for (const auto& a : args) cmd += " '" + a + "'";
  ASSERT_EQ(std::system((cmd + " >/dev/null 2>&1").c_str()), 0) << cmd;

  // Per process: fd of each open temp file, whether it was fsynced, and directory fds fsynced.
  std::ifstream in(trace);
  std::string line;
  std::map<std::string, std::map<int, std::string>> open_fds;  // pid -> fd -> path
  std::map<std::string, std::set<std::string>> synced;         // pid -> paths fsynced
  std::map<std::string, std::string> pending_dir;              // pid -> directory awaiting fsync
  const std::regex open_re(R"re(^(\d+) +openat\(AT_FDCWD, "([^"]+)", ([^)]*)\) += (\d+))re");
  const std::regex fsync_re(R"re(^(\d+) +fsync\((\d+)\) += 0)re");
  const std::regex rename_re(R"re(^(\d+) +rename\("([^"]+)", "([^"]+)"\) += 0)re");
  int published = 0, dirs_synced = 0;
  std::vector<std::string> problems;
  // strace -f splits a call that another process interrupts into "... <unfinished ...>" and
  // "<... NAME resumed> ...": join them per pid first.
  std::map<std::string, std::string> unfinished;
  const std::regex resumed_re(R"re(^(\d+) +<\.\.\. \w+ resumed>(.*)$)re");
  while (std::getline(in, line)) {
    std::smatch m;
    const std::string pid = line.substr(0, line.find(' '));
    if (const auto cut = line.rfind(" <unfinished ...>"); cut != std::string::npos) {
      unfinished[pid] = line.substr(0, cut);
      continue;
    }
    if (std::regex_search(line, m, resumed_re) && unfinished.count(pid)) {
      line = unfinished[pid] + std::string(m[2]);
      unfinished.erase(pid);
    }
    if (std::regex_search(line, m, open_re)) {
      open_fds[m[1]][std::stoi(m[4])] = m[2];
    } else if (std::regex_search(line, m, fsync_re)) {
      const std::string path = open_fds[m[1]][std::stoi(m[2])];
      synced[m[1]].insert(path);
      if (pending_dir.count(m[1]) && path == pending_dir[m[1]]) {
        ++dirs_synced;
        pending_dir.erase(m[1]);
      }
    } else if (std::regex_search(line, m, rename_re)) {
      const std::string to = m[3];
      if (to.find("checkpoint-") == std::string::npos) continue;
      ++published;
      if (!synced[m[1]].count(m[2])) problems.push_back("renamed without fsync: " + std::string(m[2]));
      if (pending_dir.count(m[1])) problems.push_back("directory not fsynced after the rename to " + pending_dir[m[1]]);
      pending_dir[m[1]] = fs::path(to).parent_path().string();
    }
  }
  for (const auto& [pid, dir] : pending_dir) problems.push_back("directory never fsynced: " + dir);
  EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems);
  // The final checkpoint (step 2): 2 shards + 1 manifest, each renamed into place.
  EXPECT_GE(published, 3) << "renames into checkpoint directories seen in " << trace;
  EXPECT_EQ(dirs_synced, published);
}

// A job stopped at 2 ranks resumes at another world size with the same global batch (ranks x
// micro-batch = 4): the checkpoint is resharded (params and optimizer state re-cut) and the rest
// of the run equals the uninterrupted 2-rank run. AdamW 2 -> 1 rank; Adafactor (replicated
// row/column statistics, per-slice v) 2 -> 4 ranks.
void expect_resharded_resume_equals_uninterrupted(Fabtrain& t, const std::string& name, const std::string& optimizer,
                                                  const std::string& ranks, const std::string& mb,
                                                  const std::vector<std::string>& extra = {}) {
  auto full = run_fabtrain(
      t.plus(t.plus(t.base(name + "-full", 6), {"--nproc", "2", "--micro-batch-size", "2", "--optimizer", optimizer}), extra));
  ASSERT_EQ(full.exit_code, 0) << full.output;
  auto first = run_fabtrain(t.plus(t.plus(t.base(name, 6), {"--nproc", "2", "--micro-batch-size", "2", "--optimizer",
                                                            optimizer, "--save-every", "3", "--exit-after-steps", "4"}),
                                   extra));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  auto second = run_fabtrain(
      t.plus(t.plus(t.base(name, 6), {"--nproc", ranks, "--micro-batch-size", mb, "--optimizer", optimizer}), extra));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("resharded checkpoint"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("from 2 to " + ranks + " ranks"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("resumed from step 3"), std::string::npos) << second.output;
  auto l = losses(t.out(name));
  auto f = losses(t.out(name + "-full"));
  ASSERT_EQ(l.size(), 7u);  // steps 1-4, then 4-6 after the resume
  expect_same_curve(std::vector<double>(l.begin() + 4, l.end()), std::vector<double>(f.begin() + 3, f.end()));
  EXPECT_LT(max_weight_diff(t.out(name + "-full"), t.out(name)), kWeightTol);
}

TEST_F(Fabtrain, ResumeAtAnotherWorldSizeReshardsAdamW) {
  expect_resharded_resume_equals_uninterrupted(*this, "reshard-adamw", "adamw", "1", "4");
}

TEST_F(Fabtrain, ResumeAtAnotherWorldSizeReshardsAdafactor) {
  expect_resharded_resume_equals_uninterrupted(*this, "reshard-adafactor", "adafactor", "4", "1");
}

// The GPU path's step (tensor shards, fused AdamW, tensor Adafactor) through a reshard.
TEST_F(Fabtrain, ResumeAtAnotherWorldSizeReshardsOnTheTensorStep) {
  expect_resharded_resume_equals_uninterrupted(*this, "reshard-tensor-adamw", "adamw", "1", "4", {"--step-impl", "tensor"});
  expect_resharded_resume_equals_uninterrupted(*this, "reshard-tensor-adafactor", "adafactor", "4", "1",
                                               {"--step-impl", "tensor"});
}

TEST_F(Fabtrain, SigkillOfOneRankEndsTheJobWithinTheTimeout) {
  const fs::path log = out("kill.log");
  pid_t parent = fork();
  if (parent == 0) {
    int fd = ::open(log.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    dup2(fd, 2);
    dup2(fd, 1);
    auto args = plus(base("kill", 100000), {"--nproc", "2", "--micro-batch-size", "2"});
    std::vector<char*> argv{const_cast<char*>(FABTRAIN_BIN)};
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(FABTRAIN_BIN, argv.data());
    _exit(127);
  }
  // Wait for training to run (a metrics line), then SIGKILL rank 1.
  pid_t rank1 = -1;
  for (int i = 0; i < 1200 && rank1 < 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (read_jsonl(out("kill") / "metrics.jsonl").empty()) continue;
    std::ifstream kids("/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) + "/children");
    pid_t k;
    while (kids >> k) {
      std::ifstream env("/proc/" + std::to_string(k) + "/environ");
      std::string all((std::istreambuf_iterator<char>(env)), {});
      if (all.find(std::string("RANK=1") + '\0') != std::string::npos && all.find("LOCAL_RANK=1") != std::string::npos) rank1 = k;
    }
  }
  ASSERT_GT(rank1, 0) << "rank 1 never started training";
  const auto t0 = std::chrono::steady_clock::now();
  kill(rank1, SIGKILL);
  int status = 0;
  pid_t done = 0;
  while (done == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
    done = waitpid(parent, &status, WNOHANG);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (done == 0) {
    kill(-parent, SIGKILL);
    kill(parent, SIGKILL);
    waitpid(parent, &status, 0);
    FAIL() << "the job outlived rank 1 by 60 s";
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 20.0);  // --collective-timeout-ms 20000 bounds it; a broken socket is faster
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("rank 1 (pid " + std::to_string(rank1) + ") was killed by signal 9"), std::string::npos) << text;
}

TEST_F(Fabtrain, ExportWritesHfSafetensorsAndConfig) {
  auto r = run_fabtrain(plus(base("exp", 2), {"--micro-batch-size", "2", "--nproc", "2"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path ckpt = trainer::list_checkpoints(out("exp")).at(0);
  auto e = run_fabtrain({"export", "--checkpoint", ckpt.string(), "--out", out("hf").string()});
  ASSERT_EQ(e.exit_code, 0) << e.output;
  ASSERT_TRUE(fs::exists(out("hf") / "model.safetensors"));
  auto cfg = Json::parse(std::ifstream(out("hf") / "config.json"));
  EXPECT_EQ(cfg["num_hidden_layers"], 2);
  // Every fp32 value of the checkpoint is in the file: header + 4 bytes per parameter.
  auto g = trainer::gather_checkpoint(ckpt);
  uint64_t numel = 0;
  for (auto& p : g.params) numel += p.second.values.size();
  std::ifstream st(out("hf") / "model.safetensors", std::ios::binary);
  uint64_t header = 0;
  st.read(reinterpret_cast<char*>(&header), 8);
  EXPECT_EQ(fs::file_size(out("hf") / "model.safetensors"), 8 + header + 4 * numel);
}

// The thread plan is logged per rank (2 ranks on this machine share its cores), flags override
// it, and a malformed OMP_NUM_THREADS is refused by name before any rank starts training.
TEST_F(Fabtrain, LogsItsThreadPlanAndRefusesAMalformedThreadCount) {
  auto r = run_fabtrain(plus(base("threads", 1), {"--nproc", "2", "--threads", "1", "--blas-threads", "1"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("threads per rank: ATen intra-op 1, BLAS "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("intra-op 1 from --threads"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" local rank(s)"), std::string::npos) << r.output;

  setenv("OMP_NUM_THREADS", "lots", 1);
  r = run_fabtrain(base("threads-bad", 1));
  unsetenv("OMP_NUM_THREADS");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("OMP_NUM_THREADS='lots' is not a positive thread count"), std::string::npos) << r.output;
}

// --trace-steps writes one Chrome trace per rank and traced step, after two warm-up steps, and
// the traces hold the step's ATen ops.
TEST_F(Fabtrain, TraceStepsWritesChromeTracesOfTheOps) {
  auto r = run_fabtrain(plus(base("trace", 4), {"--nproc", "2", "--trace-steps", "1"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("--trace-steps: step"), std::string::npos) << r.output;  // no trace trouble
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(out("trace") / "trace")) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"rank-0-step-3.json", "rank-1-step-3.json"}));
  // Chrome's trace format, the object form Kineto writes: {"traceEvents": [...], ...}.
  const Json trace = Json::parse(std::ifstream(out("trace") / "trace" / "rank-0-step-3.json"));
  ASSERT_TRUE(trace.is_object() && trace.contains("traceEvents")) << trace.dump().substr(0, 300);
  int mm = 0;
  for (const auto& e : trace["traceEvents"]) mm += e.value("name", "") == "aten::mm";
  EXPECT_GT(mm, 0) << "no aten::mm in the trace";
}

TEST_F(Fabtrain, BadInputsNameTheFileOrTheNumbers) {
  write_file(out("empty.jsonl"), "");
  auto args = base("bad", 2);
  args[3] = out("empty.jsonl").string();
  auto r = run_fabtrain(args);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("empty.jsonl"), std::string::npos) << r.output;

  write_file(out("broken.jsonl"), "{\"input_ids\": [5, 6, 7]}\nnot json\n");
  args[3] = out("broken.jsonl").string();
  r = run_fabtrain(args);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("broken.jsonl:2"), std::string::npos) << r.output;

  // CLI11's own refusals (an unknown flag, a value its validator rejects) are bad usage too.
  r = run_fabtrain(plus(base("bad", 2), {"--no-such-flag"}));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--no-such-flag"), std::string::npos) << r.output;
  r = run_fabtrain(plus(base("bad", 2), {"--micro-batch-size", "lots"}));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("lots"), std::string::npos) << r.output;

  r = run_fabtrain(plus(base("bad", 2), {"--nproc", "2", "--dp", "3"}));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("data-parallel degree 3 x pipeline degree 1 = 3 does not match the world size 2"),
            std::string::npos) << r.output;
}

// The GPU path's step (tensor shards with their own storage, fused AdamW, tensor Adafactor,
// tensor clipping) run on CPU: the same run as the host loops, and checkpoints cross between them.
TEST_F(Fabtrain, TensorStepEqualsTheHostLoopsAndCheckpointsCrossBetweenThem) {
  for (const char* optimizer : {"adamw", "adafactor"}) {
    const std::string o = optimizer;
    auto host = run_fabtrain(plus(base("host-" + o, 4), {"--nproc", "2", "--micro-batch-size", "2", "--optimizer", o,
                                                         "--step-impl", "host"}));
    ASSERT_EQ(host.exit_code, 0) << host.output;
    auto tensor = run_fabtrain(plus(base("tensor-" + o, 4), {"--nproc", "2", "--micro-batch-size", "2", "--optimizer",
                                                             o, "--step-impl", "tensor"}));
    ASSERT_EQ(tensor.exit_code, 0) << tensor.output;
    EXPECT_NE(tensor.output.find("optimizer step: tensor ops"), std::string::npos) << tensor.output;
    expect_same_curve(losses(out("tensor-" + o)), losses(out("host-" + o)));
    EXPECT_LT(max_weight_diff(out("host-" + o), out("tensor-" + o)), kWeightTol) << o;
  }
  // Stop a tensor-step run at step 2, resume it with the host loops: the checkpoint's params and
  // optimizer state came off the tensors (sync_params_to_host, the tensor optimizer's state()).
  auto args = plus(base("cross", 4), {"--nproc", "2", "--micro-batch-size", "2", "--save-every", "2"});
  auto first = run_fabtrain(plus(args, {"--step-impl", "tensor", "--exit-after-steps", "2"}));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  auto second = run_fabtrain(plus(args, {"--step-impl", "host"}));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from step 2"), std::string::npos) << second.output;
  EXPECT_LT(max_weight_diff(out("host-adamw"), out("cross")), kWeightTol);
}

TEST_F(Fabtrain, GpuFlagsAreRefusedWhereTheyCannotApply) {
  auto r = run_fabtrain(plus(base("req", 1), {"--require-transport", "IB"}));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--require-transport IB checks the network NCCL uses"), std::string::npos) << r.output;
  if (!fs::exists("/dev/nvidia0")) {  // where a GPU exists, --device cuda is simply valid
    auto args = base("nogpu", 1);
    args.back() = "cuda";  // --device cuda
    r = run_fabtrain(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--device cuda: no CUDA device is visible"), std::string::npos) << r.output;
  }
}

// --fused-step: the update of each unit inside the backward equals the usual step (no clipping in
// either: the fused step cannot clip), and the run keeps no gradient shards (state per rank falls
// by one shard's worth of fp32 per unit).
TEST_F(Fabtrain, FusedStepEqualsTheUsualStepAndKeepsNoGradientShards) {
  struct Case {
    std::string name, optimizer, impl, ranks, mb;
  };
  for (const Case& c : {Case{"adamw-host", "adamw", "host", "2", "2"}, Case{"adafactor-tensor", "adafactor", "tensor", "2", "2"},
                        Case{"adamw-tensor-1", "adamw", "tensor", "1", "4"}}) {
    auto common = std::vector<std::string>{"--nproc", c.ranks, "--micro-batch-size", c.mb, "--optimizer", c.optimizer,
                                           "--step-impl", c.impl, "--max-grad-norm", "0"};
    auto usual = run_fabtrain(plus(base("usual-" + c.name, 4), common));
    ASSERT_EQ(usual.exit_code, 0) << usual.output;
    auto fused = run_fabtrain(plus(plus(base("fused-" + c.name, 4), common), {"--fused-step"}));
    ASSERT_EQ(fused.exit_code, 0) << fused.output;
    EXPECT_NE(fused.output.find("fused step: each unit is updated in the backward"), std::string::npos) << fused.output;
    expect_same_curve(losses(out("fused-" + c.name)), losses(out("usual-" + c.name)));
    EXPECT_LT(max_weight_diff(out("usual-" + c.name), out("fused-" + c.name)), kWeightTol) << c.name;
    // The reported gradient norm is the same quantity (computed from the units as they arrive).
    auto gu = metric(out("usual-" + c.name), "grad_norm"), gf = metric(out("fused-" + c.name), "grad_norm");
    ASSERT_EQ(gu.size(), gf.size());
    for (size_t i = 0; i < gu.size(); ++i) EXPECT_NEAR(gf[i], gu[i], 1e-4 * gu[i]) << c.name << " step " << i + 1;
    auto su = metric(out("usual-" + c.name), "state_bytes_per_rank"), sf = metric(out("fused-" + c.name), "state_bytes_per_rank");
    EXPECT_LT(sf.at(0), su.at(0)) << c.name;
  }
}

// --offload-activations: recompute's checkpoints go through host copies; on CPU the numbers are
// bit-identical to recompute alone (the same ops on the same values).
TEST_F(Fabtrain, OffloadedActivationsEqualRecomputeAlone) {
  for (const std::string impl : {"host", "tensor"}) {
    auto common = std::vector<std::string>{"--nproc", "2", "--micro-batch-size", "2", "--recompute", "--step-impl", impl};
    auto plain = run_fabtrain(plus(base("recompute-" + impl, 3), common));
    ASSERT_EQ(plain.exit_code, 0) << plain.output;
    auto offl = run_fabtrain(plus(plus(base("offload-" + impl, 3), common), {"--offload-activations"}));
    ASSERT_EQ(offl.exit_code, 0) << offl.output;
    EXPECT_NE(offl.output.find("saves nothing here"), std::string::npos) << offl.output;  // said plainly on CPU
    EXPECT_EQ(losses(out("offload-" + impl)), losses(out("recompute-" + impl)));
    EXPECT_EQ(max_weight_diff(out("recompute-" + impl), out("offload-" + impl)), 0.0);
  }
}

TEST_F(Fabtrain, MemoryFlagsRefuseWhatTheyCannotDo) {
  auto r = run_fabtrain(plus(base("fs", 1), {"--fused-step"}));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("pass --max-grad-norm 0"), std::string::npos) << r.output;
  r = run_fabtrain(plus(base("fs", 1), {"--fused-step", "--max-grad-norm", "0", "--grad-accum", "2"}));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--grad-accum 2"), std::string::npos) << r.output;
  r = run_fabtrain(plus(base("oa", 1), {"--offload-activations"}));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("add --recompute"), std::string::npos) << r.output;
}

// ---- On a GPU (skipped, saying why, where none is visible) ----

bool gpu_visible(std::string* why) {
  if (!fs::exists("/dev/nvidia0") && !fs::exists("/dev/nvidiactl")) {
    *why = "no NVIDIA device node (/dev/nvidia0): this machine has no GPU";
    return false;
  }
  return true;
}

// 1 rank on the GPU in bf16 (fp32 master weights) tracks the CPU fp32 run within bf16's
// precision; NCCL at world size 1 in fp32 equals the CPU run to fp32 tolerance.
TEST_F(Fabtrain, OnTheGpuBf16TracksCpuFp32AndNcclFp32EqualsGloo) {
  std::string why;
  if (!gpu_visible(&why)) GTEST_SKIP() << why;
  auto cpu = run_fabtrain(plus(base("cpu", 5), {"--micro-batch-size", "4"}));
  ASSERT_EQ(cpu.exit_code, 0) << cpu.output;
  auto gpu_args = [&](const std::string& name, const std::vector<std::string>& extra) {
    auto a = base(name, 5);
    a.back() = "cuda";
    return plus(plus(a, {"--micro-batch-size", "4"}), extra);
  };
  auto f32 = run_fabtrain(gpu_args("gpu-f32", {}));
  ASSERT_EQ(f32.exit_code, 0) << f32.output;
  EXPECT_NE(f32.output.find("backend nccl"), std::string::npos) << f32.output;
  EXPECT_NE(f32.output.find("optimizer step: tensor ops"), std::string::npos) << f32.output;
  expect_same_curve(losses(out("gpu-f32")), losses(out("cpu")));
  EXPECT_LT(max_weight_diff(out("cpu"), out("gpu-f32")), kWeightTol);
  auto bf16 = run_fabtrain(gpu_args("gpu-bf16", {"--torch-dtype", "bfloat16"}));
  ASSERT_EQ(bf16.exit_code, 0) << bf16.output;
  auto a = losses(out("gpu-bf16")), b = losses(out("cpu"));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 2e-2 * std::abs(b[i])) << "step " << i + 1;
  // NCCL's own log was read for the network it used (the summary line, not the env line).
  EXPECT_TRUE(std::regex_search(f32.output, std::regex(R"(\] NCCL \S+ network (IB|RoCE|Socket|unknown))")))
      << f32.output;
}

// --trace-steps on the GPU: the trace holds the step's kernels with their device times (CUPTI's
// activities, not only the host ops that queued them), and fabtrain did not warn that CUPTI gave
// none. A machine that refuses profiling fails here, with fabtrain's warning in the output.
TEST_F(Fabtrain, OnTheGpuTraceStepsHoldKernelTimes) {
  std::string why;
  if (!gpu_visible(&why)) GTEST_SKIP() << why;
  auto args = base("gpu-trace", 4);
  args.back() = "cuda";
  auto r = run_fabtrain(plus(args, {"--torch-dtype", "bfloat16", "--trace-steps", "1"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("--trace-steps: step"), std::string::npos) << r.output;
  const Json trace = Json::parse(std::ifstream(out("gpu-trace") / "trace" / "rank-0-step-3.json"));
  ASSERT_TRUE(trace.is_object() && trace.contains("traceEvents")) << trace.dump().substr(0, 300);
  int kernels = 0, timed = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("cat", "") != "kernel") continue;
    ++kernels;
    timed += e.value("dur", 0.0) > 0.0;
  }
  EXPECT_GT(kernels, 10) << "the GPU step's trace has " << kernels << " kernel events";
  EXPECT_EQ(timed, kernels) << "kernel events without a device time";
}

// ---- The control interface against running jobs (docs/fabtrain.md, "Control interface") ----

// The fixture's private control directory (FABTRAIN_CONTROL_DIR): `list` and the job ids see only
// this test's jobs.
class FabtrainControl : public Fabtrain {
 public:
  RunResult control(const std::vector<std::string>& args) { return run_fabtrain(plus({"control"}, args), 30); }
  // Polls `control status JOB --json` until the job reports at least `step` (or the deadline).
  Json wait_for_step(const std::string& job, int64_t step) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
      RunResult r = control({"status", job, "--json"});
      if (r.exit_code == 0) {
        Json j = Json::parse(r.output.substr(r.output.find('{')), nullptr, false);
        if (!j.is_discarded() && j.contains("status") && j["status"]["step"].is_number() &&
            j["status"]["step"].get<int64_t>() >= step) {
          return j;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ADD_FAILURE() << "job " << job << " never reported step " << step;
    return Json();
  }
};

// Many steps: the job is still running when the test talks to it.
constexpr int kLongRun = 100000;

TEST_F(FabtrainControl, StatusReturnsNumbersAndStopLeavesACheckpointThatResumes) {
  auto args = plus(base("ctl-stop", kLongRun), {"--nproc", "2", "--micro-batch-size", "2"});
  Started job = start_fabtrain(args);
  Json st = wait_for_step("ctl-stop", 3);
  ASSERT_TRUE(st.contains("status")) << st.dump();
  EXPECT_EQ(st["status"]["total_steps"].get<int64_t>(), kLongRun);
  EXPECT_GT(st["status"]["loss"].get<double>(), 0.0);
  EXPECT_GT(st["status"]["tokens_per_s"].get<double>(), 0.0);
  RunResult listed = control({"list"});
  EXPECT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_NE(listed.output.find("ctl-stop"), std::string::npos) << listed.output;

  RunResult stop = control({"stop", "ctl-stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.output;
  RunResult done = finish_fabtrain(job, 120);
  ASSERT_EQ(done.exit_code, 0) << done.output;
  EXPECT_NE(done.output.find("stop requested"), std::string::npos) << done.output;
  auto cps = trainer::list_checkpoints(out("ctl-stop"));
  ASSERT_EQ(cps.size(), 1u) << done.output;
  const int64_t stopped_at = std::stoll(cps[0].filename().string().substr(std::string("checkpoint-").size()));
  EXPECT_GE(stopped_at, 3);
  // The endpoint went with the job.
  EXPECT_EQ(control({"status", "ctl-stop"}).exit_code, 1);

  // Resume continues from the stop's checkpoint.
  auto resumed = run_fabtrain(
      plus(base("ctl-stop", static_cast<int>(stopped_at) + 2), {"--nproc", "2", "--micro-batch-size", "2"}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from step " + std::to_string(stopped_at)), std::string::npos)
      << resumed.output;
}

TEST_F(FabtrainControl, SaveContinuesAndAbortLeavesNoCheckpoint) {
  auto args = plus(base("ctl-abort", kLongRun), {"--nproc", "2", "--micro-batch-size", "2"});
  Started job = start_fabtrain(args);
  wait_for_step("ctl-abort", 2);
  RunResult save = control({"save", "ctl-abort"});
  EXPECT_EQ(save.exit_code, 0) << save.output;
  // The save lands at a step boundary; the job keeps going past it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (trainer::list_checkpoints(out("ctl-abort")).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(trainer::list_checkpoints(out("ctl-abort")).size(), 1u);
  const auto saved = trainer::list_checkpoints(out("ctl-abort"))[0];
  const int64_t saved_step = std::stoll(saved.filename().string().substr(std::string("checkpoint-").size()));
  wait_for_step("ctl-abort", saved_step + 2);
  RunResult abort = control({"abort", "ctl-abort"});
  EXPECT_EQ(abort.exit_code, 0) << abort.output;
  RunResult done = finish_fabtrain(job, 120);
  EXPECT_NE(done.exit_code, 0) << done.output;  // aborted, not finished
  EXPECT_NE(done.output.find("abort requested"), std::string::npos) << done.output;
  // Only the requested save exists: the abort wrote none.
  auto cps = trainer::list_checkpoints(out("ctl-abort"));
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(cps[0], saved);
}

// Slurm's pre-timeout signal to the --nproc parent (as `sbatch --signal=USR1@120` delivers it):
// forwarded, every rank checkpoints the same step and the job exits 0.
TEST_F(FabtrainControl, Usr1ToTheNprocParentStopsEveryRankWithACheckpoint) {
  Started job = start_fabtrain(plus(base("ctl-usr1", kLongRun), {"--nproc", "2", "--micro-batch-size", "2"}));
  wait_for_step("ctl-usr1", 2);
  ASSERT_EQ(kill(job.pid, SIGUSR1), 0);
  RunResult done = finish_fabtrain(job, 120);
  ASSERT_EQ(done.exit_code, 0) << done.output;
  EXPECT_NE(done.output.find("stop requested (SIGUSR1)"), std::string::npos) << done.output;
  EXPECT_EQ(trainer::list_checkpoints(out("ctl-usr1")).size(), 1u);
}

TEST_F(FabtrainControl, SigtermDuringTrainingCheckpointsAndExitsCleanly) {
  Started job = start_fabtrain(base("ctl-term", kLongRun));
  wait_for_step("ctl-term", 2);
  ASSERT_EQ(kill(job.pid, SIGTERM), 0);
  RunResult done = finish_fabtrain(job, 120);
  ASSERT_EQ(done.exit_code, 0) << done.output;
  EXPECT_NE(done.output.find("stop requested (SIGTERM)"), std::string::npos) << done.output;
  EXPECT_EQ(trainer::list_checkpoints(out("ctl-term")).size(), 1u);
  // TensorBoard scalars were written as the job went.
  bool event_file = false;
  for (const auto& e : fs::directory_iterator(out("ctl-term") / "tensorboard")) {
    event_file |= e.path().filename().string().rfind("events.out.tfevents.", 0) == 0 && fs::file_size(e.path()) > 100;
  }
  EXPECT_TRUE(event_file);
}

}  // namespace
}  // namespace fabkit::testing
