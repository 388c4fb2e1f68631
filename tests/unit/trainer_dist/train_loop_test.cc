// The one training loop (trainer/app/train_loop.h) over a fake step engine: what the loop does
// for every engine, so for the sharded and the pipeline engine alike. The engine holds a real
// one-unit ShardedModel on the local comm (the loop steps it), and records what the loop asked of
// it: when it gathered its rank figures, what the control socket said while it saved.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/support/ttar.h"
#include "trainer/app/step_engine.h"
#include "trainer/app/train_log.h"
#include "trainer/app/train_loop.h"
#include "trainer/control/control_client.h"
#include "trainer/control/endpoint.h"

namespace fs = std::filesystem;

namespace fabkit::trainer {
namespace {

class FakeEngine : public StepEngine {
 public:
  FakeEngine(Comm& comm, const TrainOptions& o, TrainLog& log, fs::path socket)
      : StepEngine(comm, TrainDevice{}, false, 0, 1, 1), socket_(std::move(socket)) {
    at::Tensor w = torch::ones({4}).requires_grad_();
    std::vector<UnitParams> units{{"w", {{"w", w}}}};
    std::vector<Stage> stages{{"loss", 0, [w, mb = mb_](const at::Tensor&) {
                                 return (w * w).sum() * static_cast<double>(mb->input_ids.size(1)) /
                                        mb->loss_normalizer;
                               }}};
    model_ = std::make_unique<ShardedModel>(comm, std::move(units), std::move(stages), false);
    make_optimizer(o, comm, log);
  }
  Comm& replica_comm() override { return world_; }
  std::string step_batch_text(int64_t) const override { return "1 fake rank"; }
  double forward_backward(const std::vector<Batch>& micro, double normalizer,
                          double scale) override {
    model_->zero_grad();
    double loss = 0;
    for (const Batch& b : micro) {
      load(b, normalizer);
      loss += model_->forward_backward(scale);
    }
    return loss;
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

}  // namespace
}  // namespace fabkit::trainer
