// The one training loop (trainer/app/train_loop.h) over a fake step engine: what the loop does
// for every engine, so for the sharded and the pipeline engine alike. The engine holds a real
// one-unit ShardedModel on the local comm (the loop steps it), and records what the loop asked of
// it: when it gathered its rank figures, what the control socket said while it saved.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/record_function.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/errors.h"
#include "tests/support/ttar.h"
#include "tests/unit/trainer_dist/forwarding_comm.h"
#include "tests/unit/trainer_dist/gloo_rank_threads.h"
#include "trainer/app/run_monitor.h"
#include "trainer/app/step_engine.h"
#include "trainer/app/train_log.h"
#include "trainer/app/train_loop.h"
#include "trainer/control/agree.h"
#include "trainer/control/control_client.h"
#include "trainer/control/endpoint.h"

namespace fs = std::filesystem;

namespace fabkit::trainer {
namespace {

class FakeEngine : public StepEngine {
 public:
  // tensor_step: the shards are tensors stepped by the tensor optimizers (the GPU path, on CPU).
  FakeEngine(Comm& comm, const TrainOptions& o, TrainLog& log, fs::path socket,
             bool tensor_step = false)
      : StepEngine(comm, TrainDevice{}, tensor_step, 0, 1, 1), socket_(std::move(socket)) {
    at::Tensor w = torch::ones({4}).requires_grad_();
    std::vector<UnitParams> units{{"w", {{"w", w}}}};
    std::vector<Stage> stages{{"loss", 0, [w, mb = mb_](const at::Tensor&) {
                                 return (w * w).sum() * static_cast<double>(mb->input_ids.size(1)) /
                                        mb->loss_normalizer;
                               }}};
    model_ = std::make_unique<ShardedModel>(
        comm, std::move(units), std::move(stages), false, torch::kFloat32,
        tensor_step ? std::optional<at::Device>(at::kCPU) : std::nullopt);
    make_optimizer(o, comm, log);
  }
  std::string step_batch_text(int64_t) const override { return "1 fake rank"; }
  void begin_step(double) override {
    if (on_begin_step) on_begin_step();
  }
  at::Tensor forward_backward(const std::vector<Batch>& micro, double normalizer,
                              double scale) override {
    // A device that runs the step's "kernels" after the host has queued them and returned: they
    // end device_ms_per_step after the device finished its earlier work (a queue, as a stream).
    if (device_ms_per_step.count() > 0) {
      device_free_at =
          std::max(device_free_at, std::chrono::steady_clock::now()) + device_ms_per_step;
    }
    model_->zero_grad();
    at::Tensor loss = torch::zeros({}, torch::kDouble);
    for (const Batch& b : micro) {
      load(b, normalizer);
      loss = loss + model_->forward_backward(scale);
    }
    return loss;
  }
  void wait_for_device() override {
    ++device_waits;
    std::this_thread::sleep_until(device_free_at);
  }
  double validation_loss(const std::vector<Example>&, const TrainOptions&) override { return 0.0; }
  void add_log_metrics(Json& m, double) override {
    gathered_at.push_back(m["step"].get<int64_t>());
    m["fake_figure"] = 1;
  }
  std::optional<TrainState> resume(const std::string&, std::vector<std::string>*) override {
    return resume_to;
  }
  std::string save(SaveRequest req, std::vector<std::string>*) override {
    // What `fabtrain control status` says while this engine writes its checkpoint.
    const Json reply = control::request(socket_.string(), "status", 5000);
    phases_while_saving.push_back(reply.contains("status") ? reply["status"].value("phase", "?")
                                                           : reply.dump());
    saved_steps.push_back(req.state.step);
    return req.output_dir.string();
  }

  std::chrono::milliseconds device_ms_per_step{0};
  std::chrono::steady_clock::time_point device_free_at{};
  int64_t device_waits = 0;
  std::function<void()> on_begin_step;
  std::optional<TrainState> resume_to;
  std::vector<int64_t> gathered_at;
  std::vector<std::string> phases_while_saving;
  std::vector<int64_t> saved_steps;

 private:
  fs::path socket_;
};

class TrainLoop : public ::testing::Test {
 public:
  TrainLoop() : dir_("train-loop") {
    setenv("FABTRAIN_CONTROL_DIR", (dir_.path() / "ctl").c_str(), 1);
    o_.output_dir = (dir_.path() / "out").string();
    o_.data = "fake.jsonl";
    o_.max_steps = 7;
    o_.lr = 1e-2;
    for (int i = 0; i < 20; ++i) data_.train.push_back({{1, 2, 3, 4}, {1, 2, 3, 4}, {1, 1, 1, 1}});
  }
  ~TrainLoop() override { unsetenv("FABTRAIN_CONTROL_DIR"); }
  fs::path socket() const {
    return dir_.path() / "ctl" / (control::job_id_from_output_dir(o_.output_dir) + ".sock");
  }
  int run(FakeEngine& e) { return run_train_loop(o_, e, {data_, Json::object(), 0}, log_); }
  // The "step" lines of metrics.jsonl.
  std::vector<Json> step_metrics() const {
    std::vector<Json> out;
    std::ifstream in(fs::path(o_.output_dir) / "metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
      Json j = Json::parse(line);
      if (j.contains("grad_norm")) out.push_back(j);
    }
    return out;
  }

  fabkit::testing::TempDir dir_;
  TrainOptions o_;
  LoadedData data_;
  TrainLog log_{0};
  std::unique_ptr<Comm> comm_ = make_local_comm();
};

// Every save, periodic or final, is announced to the monitor first: `status` says "saving".
TEST_F(TrainLoop, ControlStatusSaysSavingDuringEverySave) {
  o_.save_every = 3;
  FakeEngine e(*comm_, o_, log_, socket());
  ASSERT_EQ(run(e), 0);
  EXPECT_EQ(e.saved_steps, (std::vector<int64_t>{3, 6, 7}));
  EXPECT_EQ(e.phases_while_saving, (std::vector<std::string>{"saving", "saving", "saving"}));
}

// The engine's own figures (a collective: a pipeline's all-gather of rank statistics) are asked
// for on log steps only, and land in the step's metrics.
TEST_F(TrainLoop, EngineFiguresAreGatheredOnLogStepsOnly) {
  o_.log_every = 3;
  FakeEngine e(*comm_, o_, log_, socket());
  ASSERT_EQ(run(e), 0);
  EXPECT_EQ(e.gathered_at, (std::vector<int64_t>{3, 6, 7}));
}

// A resume whose recorded position is not a multiple of this run's examples per micro-batch
// replays the partial batch and says so, whatever the engine.
TEST_F(TrainLoop, ResumeMidBatchWarnsOfTheReplayedExamples) {
  o_.micro_batch_size = 4;
  o_.max_steps = 3;
  FakeEngine e(*comm_, o_, log_, socket());
  TrainState at;
  at.step = 1;
  at.examples_in_epoch = 6;  // 6 examples = 1 batch of 4 + 2 seen again
  e.resume_to = at;
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  const int rc = run(e);
  const std::string out =
      ::testing::internal::GetCapturedStdout() + ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("2 examples before the checkpoint are seen again"), std::string::npos) << out;
  EXPECT_NE(out.find("resumed from step 1"), std::string::npos) << out;
}

// --trace-steps: the loop writes the Chrome traces, so every engine has them.
TEST_F(TrainLoop, TraceStepsWritesATraceOfTheThirdStep) {
  o_.trace_steps = 1;
  FakeEngine e(*comm_, o_, log_, socket());
  ASSERT_EQ(run(e), 0);
  EXPECT_TRUE(fs::exists(fs::path(o_.output_dir) / "trace" / "rank-0-step-3.json"));
}

// step_time_ms (metrics.jsonl, and tokens_per_s from it in TensorBoard) counts the step's device
// work: on a GPU the host returns from a step while its kernels are still queued, and a clock
// read on the host then would time the enqueueing. Here every step's work ends 80 ms after the
// host queued it, so a timed step of less than 80 ms left it out.
TEST_F(TrainLoop, StepTimeIncludesDeviceWorkStillQueuedWhenTheHostReturns) {
  o_.max_steps = 3;
  FakeEngine e(*comm_, o_, log_, socket());
  e.device_ms_per_step = std::chrono::milliseconds(80);
  ASSERT_EQ(run(e), 0);
  const std::vector<Json> steps = step_metrics();
  ASSERT_EQ(steps.size(), 3u);
  for (const Json& m : steps) {
    const double ms = m["step_time_ms"].get<double>();
    EXPECT_GE(ms, 80.0) << "step " << m["step"];
    EXPECT_NEAR(m["tokens_per_s"].get<double>(), m["tokens"].get<double>() / (ms / 1000.0),
                1e-9 * m["tokens_per_s"].get<double>());
  }
}

// Between log steps nothing waits for the device (a wait per step would cost a GPU its overlap of
// host and device): the interval from one log step to the next is timed once, from a point where
// the device was idle to the end of its last step's device work, and step_time_ms is its mean.
TEST_F(TrainLoop, StepTimeBetweenLogStepsIsTheIntervalMeanWaitedForOnlyAtItsEnds) {
  o_.max_steps = 6;
  o_.log_every = 3;
  FakeEngine e(*comm_, o_, log_, socket());
  e.device_ms_per_step = std::chrono::milliseconds(40);
  ASSERT_EQ(run(e), 0);
  const std::vector<Json> steps = step_metrics();
  ASSERT_EQ(steps.size(), 2u);
  for (const Json& m : steps) EXPECT_GE(m["step_time_ms"].get<double>(), 40.0) << m.dump();
  EXPECT_EQ(e.device_waits, 4);  // the start and the end of each of the two intervals
}

// Counts, on this thread, the reads of a tensor's value back to the host (`.item()` and friends
// all end in aten::_local_scalar_dense): on a GPU each one waits for every kernel queued before
// it. Counted through ATen's RecordFunction, so it sees every read, not only those of fabtrain's
// own helpers. A read inside another ATen op (that op's CPU kernel reading a scalar argument) is
// counted apart, under the outermost op's name: on a GPU that op runs its CUDA kernel instead.
// (`.item()` is aten::item around aten::_local_scalar_dense: a direct read.)
class ScalarReads {
 public:
  ScalarReads() {
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(
            [](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
              if (std::string_view(fn.name()) == "aten::_local_scalar_dense") {
                // Direct (a bare call, or Tensor::item's wrapper) or inside another op.
                if (stack_.empty() || stack_.front() == "aten::item") {
                  ++count_;
                } else {
                  inside_[stack_.front()]++;
                }
              }
              stack_.push_back(fn.name());
              return nullptr;
            },
            [](const at::RecordFunction&, at::ObserverContext*) { stack_.pop_back(); })
            .scopes({at::RecordScope::FUNCTION}));
  }
  ~ScalarReads() { at::removeCallback(handle_); }
  static int64_t count() { return count_; }
  static const std::map<std::string, int64_t>& inside() { return inside_; }

 private:
  at::CallbackHandle handle_;
  static thread_local int64_t count_;
  static thread_local std::vector<std::string> stack_;
  static thread_local std::map<std::string, int64_t> inside_;
};
thread_local int64_t ScalarReads::count_ = 0;
thread_local std::vector<std::string> ScalarReads::stack_;
thread_local std::map<std::string, int64_t> ScalarReads::inside_;

// A comm that counts the collectives the loop issues (a host-memory one is a sync on a GPU).
class CountingComm : public ForwardingComm {
 public:
  using ForwardingComm::ForwardingComm;
  void allreduce_sum(float* d, size_t n) override {
    ++allreduces;
    ForwardingComm::allreduce_sum(d, n);
  }
  void allreduce_sum(double* d, size_t n) override {
    ++allreduces;
    ForwardingComm::allreduce_sum(d, n);
  }
  int64_t allreduces = 0;
};

// A step that logs nothing reads nothing back: no value leaves the device between one step's start
// and the next's (the loss stays on the device, the clip runs on the device), and the world's
// scalars cross in ONE collective: the loss, the gradient norm and the control votes together;
// the token counts need none (every rank computes them, token_counts.h). On a GPU that collective
// is on device memory, so no host collective is left in the step (fp16 adds its finite check).
// The log step reads the figures once. (Tensor shards on CPU: the GPU path's code; a GPU run does
// the same reads.)
TEST_F(TrainLoop, NonLogStepsReadNoValueBackAndBatchTheirScalars) {
  o_.log_every = 4;
  o_.max_steps = 6;
  o_.grad_accum = 2;
  o_.max_grad_norm = 0.5;  // the clip runs (the fake's gradient norm is 8)
  CountingComm comm(*comm_);
  FakeEngine e(comm, o_, log_, socket(), /*tensor_step=*/true);
  ScalarReads reads;
  std::vector<int64_t> reads_at, allreduces_at;  // at each step's start
  e.on_begin_step = [&] {
    reads_at.push_back(ScalarReads::count());
    allreduces_at.push_back(comm.allreduces);
  };
  ASSERT_EQ(run(e), 0);
  ASSERT_EQ(reads_at.size(), 6u);
  // The only reads inside an op: the fused AdamW CPU kernel reading its step counter (the CUDA
  // kernel reads it on the device).
  for (const auto& [op, n] : ScalarReads::inside())
    EXPECT_EQ(op, "aten::_fused_adamw_") << n << " reads";
  // Between the starts of steps k and k+1: step k's forward, backward, step and tail, and step
  // k+1's batch. Steps 1, 2, 3 and 5 log nothing; step 4 logs.
  for (int k : {1, 2, 5}) {
    EXPECT_EQ(reads_at[k] - reads_at[k - 1], 0) << "values read back in non-log step " << k;
    EXPECT_EQ(allreduces_at[k] - allreduces_at[k - 1], 1) << "collectives in step " << k;
  }
  // The figures it logs are those of the host loops, which read every value on the host.
  const std::vector<Json> tensor_steps = step_metrics();
  o_.output_dir = (dir_.path() / "out-host").string();
  TrainLog host_log{0};
  FakeEngine host(*comm_, o_, host_log, socket(), /*tensor_step=*/false);
  ASSERT_EQ(run_train_loop(o_, host, {data_, Json::object(), 0}, host_log), 0);
  const std::vector<Json> host_steps = step_metrics();
  ASSERT_EQ(tensor_steps.size(), 2u);  // steps 4 and 6
  ASSERT_EQ(host_steps.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    for (const char* k : {"step", "loss", "grad_norm"}) {
      EXPECT_NEAR(tensor_steps[i][k].get<double>(), host_steps[i][k].get<double>(),
                  1e-6 * std::abs(host_steps[i][k].get<double>()))
          << k << " at log step " << i;
    }
    EXPECT_GT(tensor_steps[i]["grad_norm"].get<double>(), 0.5);  // so the clip ran
  }
}

// Every rank loads the data itself and counts every replica's tokens from it: a rank whose data
// differ (a per-node copy of the file that is not the same) is refused before the first step,
// naming the file and the rank, instead of training with losses divided by different counts.
TEST_F(TrainLoop, RanksWithDifferentDataAreRefusedBeforeTheFirstStep) {
  o_.output_dir = (dir_.path() / "two-ranks").string();
  LoadedData other = data_;
  other.train[3].labels[2] = -100;
  std::vector<std::string> errors(2);
  run_ranks(2, [&](Comm& c) {
    TrainLog log{c.rank()};
    FakeEngine e(c, o_, log, socket());
    try {
      run_train_loop(o_, e, {c.rank() == 0 ? data_ : other, Json::object(), c.rank()}, log);
    } catch (const UsageError& err) {
      errors[static_cast<size_t>(c.rank())] = err.what();
    }
  });
  for (const std::string& err : errors) {
    EXPECT_NE(err.find("fake.jsonl: rank 1 loaded other training examples than rank 0"),
              std::string::npos)
        << err;
  }
}

// The control votes of a step, summed over the ranks, as finish_step leaves them.
struct SummedVotes {
  at::Tensor votes;
  CommRequestPtr landed;
};
SummedVotes sum_votes(Comm& c, control::Action local) {
  const control::Votes v = control::vote_for(local);
  at::Tensor t = torch::tensor(std::vector<double>(v.begin(), v.end()), torch::kDouble);
  CommRequestPtr landed = c.allreduce_sum_landed(t.data_ptr<double>(), v.size());
  return {t, std::move(landed)};
}

// Deferred (a GPU): the votes of step k are read after step k+1 (whose work is then queued), so
// every rank acts one step later, at the same step; a log step reads its own votes at once. Not
// deferred (the CPU): at the step itself. Two real Gloo ranks, each seeing different requests.
TEST(ControlAgreement, EveryRankActsAtTheSameStepOneStepLateWhenDeferred) {
  using control::Action;
  // Per step (1-based): what rank 0 and rank 1 saw; steps 5 and 8 are log steps.
  const std::vector<std::pair<Action, Action>> seen = {
      {Action::kNone, Action::kNone}, {Action::kNone, Action::kSave},
      {Action::kNone, Action::kNone}, {Action::kStop, Action::kSave},
      {Action::kNone, Action::kNone}, {Action::kNone, Action::kNone},
      {Action::kSave, Action::kNone}, {Action::kNone, Action::kAbort},
      {Action::kNone, Action::kNone}};
  const auto log_step = [](size_t step) { return step == 5 || step == 8; };
  for (const bool defer : {true, false}) {
    std::vector<std::vector<Action>> taken(2);
    run_ranks(2, [&](Comm& c) {
      ControlAgreement agreement(defer);
      for (size_t k = 1; k <= seen.size(); ++k) {
        const auto& [r0, r1] = seen[k - 1];
        SummedVotes s = sum_votes(c, c.rank() == 0 ? r0 : r1);
        taken[static_cast<size_t>(c.rank())].push_back(
            agreement.after_step(s.votes, std::move(s.landed), log_step(k)));
      }
    });
    EXPECT_EQ(taken[0], taken[1]) << "defer " << defer;
    const std::vector<Action> expected =
        defer ? std::vector<Action>{Action::kNone,  Action::kNone, Action::kSave,  // step 2's save
                                    Action::kNone,  Action::kStop,  // step 4's, read at log step 5
                                    Action::kNone,  Action::kNone,
                                    Action::kAbort,  // step 7's save, 8's abort: log step
                                    Action::kNone}
              : std::vector<Action>{Action::kNone, Action::kSave,  Action::kNone,
                                    Action::kStop, Action::kNone,  Action::kNone,
                                    Action::kSave, Action::kAbort, Action::kNone};
    EXPECT_EQ(taken[0], expected) << "defer " << defer;
  }
}

}  // namespace
}  // namespace fabkit::trainer
