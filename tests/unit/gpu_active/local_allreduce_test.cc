// The intra-node all-reduce over fabcheck-nccl-runner children, driven by fake runners (sh
// scripts speaking the runner's child protocol): the slowest rank's figures, the environment per
// algorithm, and a hang, a failure, an unavailable rank, a wrong sum, a bad RESULT — each ends
// named, within the deadline, with every child reaped.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "fabric/nccl_runner/local_allreduce.h"

namespace fabkit::fabric {
namespace {

using Clock = std::chrono::steady_clock;

// The runner's side of the protocol, with hooks: $HANG_BEFORE_READY / $HANG_AFTER_GO name a rank
// that stops answering; $FAIL_RANK says FAILED and logs its last words after it, as a rank tearing
// its communicator down does; $WRONG_RANK reports a wrong sum.
const char* kFakeRunner = R"(#!/bin/sh
rank=$2
id=$(printf '%0256d' 0)
[ "$rank" = "$HANG_BEFORE_READY" ] && exec sleep 1000
[ "$rank" = "$UNAVAILABLE_RANK" ] && { echo "UNAVAILABLE no CUDA device/driver: cudaGetDeviceCount: cudaErrorNoDevice" >&3; exit 0; }
if [ "$rank" = 0 ]; then echo "READY $id" >&3; else echo "READY -" >&3; fi
read line || exit 0
[ "$line" = STOP ] && exit 0
[ "$line" = "GO $id" ] || { echo "FAILED child_protocol expected GO with the id, got: $line" >&3; exit 1; }
[ "$rank" = "$HANG_AFTER_GO" ] && exec sleep 1000
[ "$rank" = "$FAIL_RANK" ] && { echo "FAILED nccl_error ncclCommInitRankConfig: unhandled system error" >&3; sleep 0.3; echo "NCCL WARN socket failure"; exit 1; }
echo "PROGRESS 1024" >&3
bus=$((180 + rank)); [ "$NCCL_ALGO" = Ring ] && bus=$((150 + rank))
[ -n "$NCCL_ALGO" ] && [ "$NCCL_ALGO" != Ring ] && bus=1
ok=true; [ "$rank" = "$WRONG_RANK" ] && ok=false
[ "$rank" = "$BAD_RESULT_RANK" ] && { echo 'RESULT {"sizes":"many"}' >&3; exit 0; }
echo "RESULT {\"sizes\":[{\"bytes\":1024,\"time_us\":$((10 + rank)),\"algbw_gbps\":$((100 + rank)),\"busbw_gbps\":$bus,\"correct\":$ok}],\"nccl_version\":22907}" >&3
echo "NCCL INFO rank $rank done"
)";

class FakeRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fabkit-fake-runner-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    runner_ = dir_ + "/fabcheck-nccl-runner";
    std::ofstream(runner_) << kFakeRunner;
    ::chmod(runner_.c_str(), 0755);
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  TransportRun run(std::map<std::string, std::string> env_set = {},
                   std::vector<std::string> unset = {}, int timeout_ms = 10000, int ranks = 3) {
    LocalAllreduceSpec s;
    s.runner_path = runner_;
    s.ranks = ranks;
    s.bytes = 1024;
    s.iters = 2;
    s.warmup = 1;
    s.env_set = std::move(env_set);
    s.env_unset = std::move(unset);
    s.timeout_ms = timeout_ms;
    auto t0 = Clock::now();
    TransportRun r = run_local_allreduce(s);
    elapsed_ms_ = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return r;
  }

  std::string dir_, runner_;
  double elapsed_ms_ = 0;
};

TEST_F(FakeRunner, ReportsTheSlowestRankPerAlgorithm) {
  // The caller's own NCCL_ALGO must not leak into the default run.
  ::setenv("NCCL_ALGO", "Tree", 1);
  TransportRun def = run({}, {"NCCL_ALGO"});
  TransportRun ring = run({{"NCCL_ALGO", "Ring"}});
  ::unsetenv("NCCL_ALGO");
  ASSERT_EQ(def.status, "ok") << def.reason << " " << def.extra.dump();
  ASSERT_EQ(def.sizes.size(), 1u);
  EXPECT_DOUBLE_EQ(def.sizes[0].busbw_gbps, 180);  // min over ranks 180, 181, 182
  EXPECT_DOUBLE_EQ(def.sizes[0].algbw_gbps, 100);
  EXPECT_DOUBLE_EQ(def.sizes[0].time_us, 12);  // max
  EXPECT_TRUE(def.sizes[0].correct);
  EXPECT_EQ(def.extra["nccl_version"], 22907);
  EXPECT_EQ(def.extra["ranks"], 3);
  EXPECT_EQ(def.extra["env"]["NCCL_DEBUG"], "WARN");
  EXPECT_EQ(def.extra["child_exits"], Json::array({"exit 0", "exit 0", "exit 0"}));
  ASSERT_EQ(ring.status, "ok") << ring.reason;
  EXPECT_DOUBLE_EQ(ring.sizes[0].busbw_gbps, 150);
  EXPECT_EQ(ring.extra["env"]["NCCL_ALGO"], "Ring");
}

TEST_F(FakeRunner, ARankThatHangsAfterGoIsKilledAtTheDeadline) {
  ::setenv("HANG_AFTER_GO", "1", 1);
  TransportRun r = run({}, {}, /*timeout_ms=*/1500);
  ::unsetenv("HANG_AFTER_GO");
  EXPECT_EQ(r.status, "failed");
  EXPECT_EQ(r.extra["error"], "timeout");
  EXPECT_NE(r.reason.find("rank(s) 1 had no result after 1 s"), std::string::npos) << r.reason;
  EXPECT_LT(elapsed_ms_, 5000);
  EXPECT_EQ(r.extra["child_exits"][1], "signal 9") << r.extra.dump();
}

TEST_F(FakeRunner, ARankThatHangsBeforeReadyIsKilledAtTheDeadline) {
  ::setenv("HANG_BEFORE_READY", "2", 1);
  TransportRun r = run({}, {}, /*timeout_ms=*/1200);
  ::unsetenv("HANG_BEFORE_READY");
  EXPECT_EQ(r.status, "failed");
  EXPECT_EQ(r.extra["error"], "timeout");
  EXPECT_NE(r.reason.find("rank(s) 2 not ready"), std::string::npos) << r.reason;
  EXPECT_LT(elapsed_ms_, 5000);
}

TEST_F(FakeRunner, AFailedRankNamesItselfAndItsLog) {
  ::setenv("FAIL_RANK", "1", 1);
  TransportRun r = run();
  ::unsetenv("FAIL_RANK");
  EXPECT_EQ(r.status, "failed");
  EXPECT_EQ(r.extra["error"], "nccl_error");
  EXPECT_EQ(r.reason, "rank 1: ncclCommInitRankConfig: unhandled system error");
  // The failed rank's last words came after its FAILED line: it was let exit, not killed.
  EXPECT_NE(r.extra.value("log_tail", "").find("rank 1: NCCL WARN socket failure"),
            std::string::npos)
      << r.extra.dump();
  EXPECT_EQ(r.extra["child_exits"][1], "exit 1") << r.extra.dump();
}

TEST_F(FakeRunner, UnavailableWrongSumsAndBadResults) {
  ::setenv("UNAVAILABLE_RANK", "0", 1);
  TransportRun u = run();
  ::unsetenv("UNAVAILABLE_RANK");
  EXPECT_EQ(u.status, "unavailable");
  EXPECT_NE(u.reason.find("rank 0: no CUDA device/driver"), std::string::npos) << u.reason;

  ::setenv("WRONG_RANK", "2", 1);
  TransportRun w = run();
  ::unsetenv("WRONG_RANK");
  EXPECT_EQ(w.status, "failed");
  EXPECT_EQ(w.extra["error"], "wrong_result");

  ::setenv("BAD_RESULT_RANK", "1", 1);
  TransportRun b = run();
  ::unsetenv("BAD_RESULT_RANK");
  EXPECT_EQ(b.status, "failed");
  EXPECT_EQ(b.extra["error"], "child_protocol");
  EXPECT_NE(b.reason.find("rank 1: RESULT is not"), std::string::npos) << b.reason;
}

TEST(LocalAllreduce, MissingRunnerAndBadSpec) {
  LocalAllreduceSpec s;
  s.runner_path = "/nonexistent/fabcheck-nccl-runner";
  s.ranks = 2;
  TransportRun r = run_local_allreduce(s);
  EXPECT_EQ(r.status, "unavailable");
  EXPECT_EQ(r.extra["error"], "runner_not_built");
  s.ranks = 0;
  EXPECT_EQ(run_local_allreduce(s).extra["error"], "invalid_spec");
}

}  // namespace
}  // namespace fabkit::fabric
