// The whole pattern docs/fabtrain.md gives the training loop, in a separate process: a forked
// child runs a simulated loop (StopSignals, ControlServer, publish_status, agree_on_action over a
// 1-rank fake Comm, a "checkpoint" file written on save/stop), and the parent drives it with the
// `fabtrain control` client and with signals, as a user would.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "tests/support/ttar.h"
#include "tests/unit/trainer_control/control_test_util.h"
#include "tests/unit/trainer_control/fake_comm.h"
#include "trainer/control/agree.h"
#include "trainer/control/control_client.h"
#include "trainer/control/control_server.h"
#include "trainer/control/stop_signals.h"

namespace fabkit::trainer::control {
namespace {
namespace fs = std::filesystem;
constexpr int kAbortExit = 5;

// The child's loop: 20 ms steps, at most 500 of them (10 s: the test's own bound).
int simulated_run(const fs::path& ctl, const fs::path& out) {
  StopSignals signals;
  ControlServer server({"sim", ctl, out});
  FakeCommGroup group(1);
  ThreadComm comm(&group, 0);
  for (int64_t step = 1; step <= 500; ++step) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    server.publish_status({step, 500, 1.0 / step, 1000, "training"});
    const Action a = agree_on_action(comm, stronger(server.poll(), signals.requested()));
    if (a == Action::kSave || a == Action::kStop)
      std::ofstream(out / ("checkpoint-" + std::to_string(step))) << step;
    if (a == Action::kStop) return 0;
    if (a == Action::kAbort) return kAbortExit;
  }
  return 1;
}

class SimulatedJob : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.path() / "out");
    pid_ = ::fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) ::_exit(simulated_run(dir_.path() / "ctl", dir_.path() / "out"));
    // Ready once it answers status.
    for (int i = 0; i < 500; ++i) {
      if (run_control({"status", "sim"}, env()).exit_code == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    FAIL() << "the simulated job never answered status";
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Environment env() const { return env_with_dir(dir_.path() / "ctl"); }
  // The child's exit code; -1 if it did not exit within 10 s (then it is killed).
  int wait_exit() {
    for (int i = 0; i < 1000; ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  int checkpoints() const {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir_.path() / "out"))
      n += e.path().filename().string().rfind("checkpoint-", 0) == 0;
    return n;
  }
  testing::TempDir dir_{"ctl_sim"};
  pid_t pid_ = -1;
};

TEST_F(SimulatedJob, SaveThenStopFromAnotherShell) {
  // The step count moves while the job trains.
  int64_t step = 0;
  for (int i = 0; i < 500 && step < 2; ++i) {
    ControlOutcome s = run_control({"status", "sim", true}, env());
    ASSERT_EQ(s.exit_code, 0) << s.err;
    step = Json::parse(s.out)["status"]["step"].get<int64_t>();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(step, 2);

  ASSERT_EQ(run_control({"save", "sim"}, env()).exit_code, 0);
  for (int i = 0; i < 500 && checkpoints() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(checkpoints(), 1);
  EXPECT_EQ(run_control({"status", "sim"}, env()).exit_code, 0);  // still running after save

  ASSERT_EQ(run_control({"stop", "sim"}, env()).exit_code, 0);
  EXPECT_EQ(wait_exit(), 0);
  EXPECT_EQ(checkpoints(), 2);
  // A clean exit removes the endpoint: nothing stale is left for cleanup.
  EXPECT_FALSE(fs::exists(dir_.path() / "ctl" / "sim.json"));
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir_.path() / "ctl" / "sim.sock")));
  EXPECT_EQ(run_control({"status", "sim"}, env()).exit_code, 1);
}

TEST_F(SimulatedJob, SigtermStops) {
  ASSERT_EQ(::kill(pid_, SIGTERM), 0);
  EXPECT_EQ(wait_exit(), 0);
  EXPECT_EQ(checkpoints(), 1);
}

TEST_F(SimulatedJob, AbortLeavesNoCheckpoint) {
  ASSERT_EQ(run_control({"abort", "sim"}, env()).exit_code, 0);
  EXPECT_EQ(wait_exit(), kAbortExit);
  EXPECT_EQ(checkpoints(), 0);
}

TEST_F(SimulatedJob, KilledJobIsCleanedUp) {
  ASSERT_EQ(::kill(pid_, SIGKILL), 0);
  EXPECT_EQ(wait_exit(), 128 + SIGKILL);
  ControlOutcome l = run_control({"list", "", true}, env());
  ASSERT_EQ(Json::parse(l.out)["jobs"].size(), 1u);
  EXPECT_EQ(Json::parse(l.out)["jobs"][0]["state"], "stale");
  ControlOutcome c = run_control({"cleanup", ""}, env());
  EXPECT_NE(c.out.find("'sim' (pid "), std::string::npos) << c.out;
  EXPECT_TRUE(fs::is_empty(dir_.path() / "ctl"));
}

}  // namespace
}  // namespace fabkit::trainer::control
