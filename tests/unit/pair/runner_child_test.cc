// The agent's side of the runner child (fabric/agent/transport_child.h) against scripted
// children: one that aborts after a size the way Gloo did over soft-RoCE, one that hangs, one that
// answers, one that breaks the protocol. This test process plays the agent: it must survive each,
// and the answer must name what happened. The real binary's `fabcheck agent-runner` and its test
// hook run in tests/integration/pair/test_pair_runner_child.py.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "fabric/agent/agent_commands.h"
#include "fabric/agent/transport_child.h"

namespace fabkit::agent {
namespace {

class RunnerChildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fabkit-runner-child-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  // A child program: sh, reading the request from stdin as the real child does.
  std::string script(const std::string& body) {
    const std::string path = dir_ + "/runner-" + std::to_string(n_++);
    std::ofstream(path) << "#!/bin/sh\nrequest=$(cat)\n" << body << "\n";
    ::chmod(path.c_str(), 0700);
    return path;
  }

  Json run(const std::string& program, int deadline_ms, std::vector<std::pair<size_t, size_t>>* progress = nullptr) {
    RunnerChildSpec s;
    s.program = program;
    s.transport = "gloo-ibverbs";
    s.args = {{"transport", "gloo-ibverbs"}};
    s.token = "t";
    s.deadline_ms = deadline_ms;
    return run_transport_in_child(s, [&](size_t done, size_t total) {
      if (progress) progress->push_back({done, total});
    });
  }

  std::string dir_;
  int n_ = 0;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST_F(RunnerChildTest, AbortInTheChildIsNamedWithItsSignalAndLastWords) {
  std::vector<std::pair<size_t, size_t>> progress;
  const Json r = run(script("echo 'PROGRESS 1 2' >&3\n"
                            "echo 'an early line nobody needs' >&2\n"
                            "echo \"terminate called after throwing an instance of 'gloo::EnforceNotMet'\" >&2\n"
                            "echo '  what():  [enforce fail at gloo/transport/ibverbs/buffer.cc:63] "
                            "sendPending_ == 0. 1 vs 0. Destructing buffer expecting completions' >&2\n"
                            "kill -ABRT $$"),
                     10000, &progress);
  EXPECT_EQ(r["status"], "failed");
  EXPECT_EQ(r["transport"], "gloo-ibverbs");
  EXPECT_EQ(r["extra"]["error"], "runner_crashed");
  const std::string reason = r["reason"];
  EXPECT_NE(reason.find("killed by SIGABRT (signal 6"), std::string::npos) << reason;
  EXPECT_NE(reason.find("after 1 of 2 sizes"), std::string::npos) << reason;
  EXPECT_NE(reason.find("Destructing buffer expecting completions"), std::string::npos) << reason;
  EXPECT_NE(reason.find("gloo::EnforceNotMet"), std::string::npos) << reason;
  const std::string words = r["extra"]["last_words"];
  EXPECT_NE(words.find("terminate called after throwing"), std::string::npos) << words;
  EXPECT_EQ(r["extra"]["child_exit"].get<std::string>().rfind("killed by SIGABRT (signal 6: Aborted)", 0), 0u);
  EXPECT_EQ(r["extra"]["sizes_done"], 1);
  EXPECT_EQ(r["extra"]["sizes_total"], 2);
  // The per-size progress was relayed before the crash.
  ASSERT_EQ(progress.size(), 1u);
  EXPECT_EQ(progress[0], (std::pair<size_t, size_t>{1, 2}));
}

TEST_F(RunnerChildTest, SegfaultAndExitStatusAreCrashesToo) {
  Json r = run(script("echo 'Segmentation fault ahead' >&2\nkill -SEGV $$"), 10000);
  EXPECT_EQ(r["extra"]["error"], "runner_crashed");
  EXPECT_NE(r["reason"].get<std::string>().find("SIGSEGV"), std::string::npos) << r.dump();
  EXPECT_NE(r["reason"].get<std::string>().find("before its first size"), std::string::npos);
  r = run(script("echo 'fatal: no device' >&2\nexit 3"), 10000);
  EXPECT_EQ(r["extra"]["error"], "runner_crashed");
  EXPECT_NE(r["reason"].get<std::string>().find("ended with exit status 3"), std::string::npos)
      << r.dump();
  EXPECT_NE(r["reason"].get<std::string>().find("fatal: no device"), std::string::npos);
}

TEST_F(RunnerChildTest, HangingChildIsKilledAtTheDeadline) {
  auto t0 = std::chrono::steady_clock::now();
  const Json r = run(script("echo 'PROGRESS 1 3' >&3\necho 'waiting on the peer forever' >&2\n"
                            "exec sleep 60"),
                     700);
  EXPECT_LT(seconds_since(t0), 5.0);
  EXPECT_EQ(r["status"], "failed");
  EXPECT_EQ(r["extra"]["error"], "runner_timeout");
  const std::string reason = r["reason"];
  EXPECT_NE(reason.find("within the sweep's bound of 700 ms after 1 of 3 sizes"), std::string::npos)
      << reason;
  EXPECT_NE(reason.find("waiting on the peer forever"), std::string::npos) << reason;
}

TEST_F(RunnerChildTest, AnswerPassesThroughWithHowTheChildEnded) {
  const Json r = run(script("echo 'PROGRESS 1 1' >&3\n"
                            "echo 'RESULT {\"transport\":\"gloo-ibverbs\",\"status\":\"ok\",\"reason\":\"\","
                            "\"sizes\":[{\"bytes\":4096,\"correct\":true}],\"extra\":{}}' >&3"),
                     10000);
  EXPECT_EQ(r["status"], "ok");
  EXPECT_EQ(r["sizes"].size(), 1u);
  EXPECT_EQ(r["extra"]["child_exit"], "exit status 0");
  EXPECT_FALSE(r["extra"].contains("last_words"));
}

// A library that finishes the sweep and then dies in its teardown (where Gloo's buffer threw):
// the figures are kept, the run is failed (a job would die the same way).
TEST_F(RunnerChildTest, CrashAfterTheAnswerKeepsTheFiguresAndFailsTheRun) {
  const Json r = run(script("echo 'RESULT {\"transport\":\"gloo-ibverbs\",\"status\":\"ok\",\"reason\":\"\","
                            "\"sizes\":[{\"bytes\":4096,\"correct\":true}],\"extra\":{}}' >&3\n"
                            "echo 'abort in a destructor' >&2\nkill -ABRT $$"),
                     10000);
  EXPECT_EQ(r["status"], "failed");
  EXPECT_EQ(r["extra"]["error"], "runner_crashed");
  EXPECT_EQ(r["sizes"].size(), 1u);
  EXPECT_NE(r["reason"].get<std::string>().find("after its answer"), std::string::npos) << r.dump();
}

TEST_F(RunnerChildTest, ErrorLineIsTheAgentsOwnError) {
  try {
    run(script("echo 'ERROR agent.bad_transport_args gloo-ibverbs needs extra.hca' >&3"), 10000);
    FAIL() << "no AgentOpError";
  } catch (const AgentOpError& e) {
    EXPECT_EQ(e.code(), "agent.bad_transport_args");
    EXPECT_STREQ(e.what(), "gloo-ibverbs needs extra.hca");
  }
}

TEST_F(RunnerChildTest, GarbageOnTheAnswerPipeIsAProtocolFailure) {
  const Json r = run(script("echo 'hello there' >&3"), 10000);
  EXPECT_EQ(r["extra"]["error"], "runner_protocol");
  EXPECT_NE(r["reason"].get<std::string>().find("unexpected line on fd 3: 'hello there'"), std::string::npos);
}

TEST_F(RunnerChildTest, MissingProgramIsNamed) {
  const Json r = run(dir_ + "/no-such-runner", 10000);
  EXPECT_EQ(r["extra"]["error"], "runner_not_started");
  EXPECT_NE(r["reason"].get<std::string>().find("no-such-runner"), std::string::npos);
}

TEST(LastWords, KeepsTheLastLinesWithinTheBound) {
  EXPECT_EQ(last_words(""), "");
  EXPECT_EQ(last_words("a\nb\n\nc\n", 2, 100), "b\nc");
  EXPECT_EQ(last_words("first\r\nsecond\r\n", 8, 100), "first\nsecond");
  // Whole lines only: "bbbbb" would not fit beside "cc" in 7 bytes.
  EXPECT_EQ(last_words("aaa\nbbbbb\ncc\n", 8, 7), "cc");
  // One line longer than the bound: its end, marked.
  EXPECT_EQ(last_words(std::string(50, 'x') + "END\n", 8, 10), "..." + std::string(7, 'x') + "END");
}

}  // namespace
}  // namespace fabkit::agent
