// The parent's end of fabcheck-gpu-bench, driven by fake children (sh scripts writing the
// protocol on fd 3): a full run, and every way a child can go wrong — a hang killed at the
// silence timeout, the budget running out, malformed, oversized and truncated lines, a child
// that dies — each a named error that keeps the figures sent before.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "fabric/gpu_active/bench_runner.h"
#include "fabric/gpu_active/gpu_active_check.h"
#include "probes/gpu_active/gpu_active_facts.h"

namespace fabkit::fabric {
namespace {

using Clock = std::chrono::steady_clock;

class FakeBench : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fabkit-fake-bench-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  // An executable sh script; `body` writes protocol lines with `>&3`.
  std::string script(const std::string& body) {
    std::string path = dir_ + "/fake-bench-" + std::to_string(n_++);
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }

  probes::GpuActiveFacts run(const std::string& program, int silence_ms = 5000,
                             int budget_ms = 20000) {
    BenchRun r;
    r.program = program;
    r.env = {"PATH=/usr/bin:/bin"};
    r.deadline = wire::deadline_in_ms(budget_ms);
    r.silence_timeout_ms = silence_ms;
    r.on_step = [this](const std::string& label) { steps_.push_back(label); };
    probes::GpuActiveFacts f;
    auto t0 = Clock::now();
    run_gpu_bench(r, &f);
    elapsed_ms_ = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return f;
  }

  std::string dir_;
  int n_ = 0;
  std::vector<std::string> steps_;
  double elapsed_ms_ = 0;
};

const char* kHello =
    R"(echo 'HELLO {"protocol":1,"cuda_runtime":13000,"cuda_driver":13000,"devices":[{"index":0,"name":"NVIDIA H100 80GB HBM3","bus_id":"00000000:18:00.0","memory_bytes":85045231616},{"index":1,"name":"NVIDIA H100 80GB HBM3","bus_id":"0000:2A:00.0"}]}' >&3)";

TEST_F(FakeBench, AFullRunFillsEveryFigure) {
  std::string body = std::string(kHello) + "\n";
  for (int g = 0; g < 2; ++g) {
    std::string gs = std::to_string(g);
    body += "echo 'STEP {\"gpu\":" + gs + ",\"step\":\"gemm_bf16\"}' >&3\n";
    body += "echo 'FIGURE {\"gpu\":" + gs +
            ",\"step\":\"gemm_bf16\",\"value\":751.5,\"iters\":50,\"elapsed_ms\":73.2}' >&3\n";
    body += "echo 'STEP {\"gpu\":" + gs + ",\"step\":\"h2d\"}' >&3\n";
    body += "echo 'FIGURE {\"gpu\":" + gs +
            ",\"step\":\"h2d\",\"value\":53.9,\"iters\":10,\"elapsed_ms\":49.8,\"link\":{\"speed\":"
            "\"32.0 GT/s PCIe\",\"width\":\"16\"}}' >&3\n";
  }
  body += "echo 'STEP {\"gpu\":-1,\"step\":\"h2d_concurrent\"}' >&3\n";
  body += "echo 'FIGURE {\"gpu\":1,\"step\":\"h2d_concurrent\",\"value\":27.0,\"iters\":10}' >&3\n";
  body += "echo 'DONE' >&3\necho 'some log line'\n";
  probes::GpuActiveFacts f = run(script(body));
  EXPECT_EQ(f.status, "ran") << f.reason;
  EXPECT_EQ(f.bench_exit, "exit status 0");
  ASSERT_EQ(f.gpus.size(), 2u);
  EXPECT_EQ(f.gpus[0].bus_id, "0000:18:00.0");  // NVML's 8-digit domain normalised
  EXPECT_EQ(f.gpus[1].bus_id, "0000:2a:00.0");
  EXPECT_EQ(*f.gpus[0].memory_bytes, 85045231616u);
  ASSERT_NE(f.gpus[1].figure("gemm_bf16"), nullptr);
  EXPECT_DOUBLE_EQ(*f.gpus[1].figure("gemm_bf16")->measured, 751.5);
  EXPECT_EQ(f.gpus[1].figure("gemm_bf16")->iters, 50);
  EXPECT_EQ(*f.gpus[0].link_under_load.generation, 5);
  EXPECT_EQ(*f.gpus[0].link_under_load.width, 16);
  EXPECT_DOUBLE_EQ(*f.gpus[1].figure("h2d_concurrent")->measured, 27.0);
  EXPECT_EQ(f.gpus[0].figure("h2d_concurrent"), nullptr);
  EXPECT_EQ(*f.cuda_runtime_version, 13000);
  EXPECT_EQ(steps_.size(), 5u);
  EXPECT_EQ(steps_.front(), "GPU 0 gemm_bf16");
  EXPECT_EQ(steps_.back(), "every GPU h2d_concurrent");
}

// The whole check (gather_gpu_active) over a fake child that measures one GPU: no all-reduce is
// attempted (no runner is even looked for), and the report says so as a skipped step and an info
// finding, not as an empty list.
TEST_F(FakeBench, OneGpuSaysTheAllReduceWasSkipped) {
  std::string body =
      R"(echo 'HELLO {"protocol":1,"cuda_runtime":13000,"cuda_driver":13000,"devices":[{"index":0,"name":"NVIDIA H200","bus_id":"00000000:18:00.0"}]}' >&3)"
      "\necho 'STEP {\"gpu\":0,\"step\":\"gemm_bf16\"}' >&3\n"
      "echo 'FIGURE {\"gpu\":0,\"step\":\"gemm_bf16\",\"value\":700.0,\"iters\":50}' >&3\n"
      "echo 'DONE' >&3\n";
  GpuActiveOptions o;
  o.bench_path = script(body);
  o.runner_path = dir_ + "/no-such-runner";
  o.settings.budget_s = 20;
  probes::GpuActiveFacts f = gather_gpu_active(o, SystemRoots::live_system(""), Environment(std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}}),
                                               Json{{"count", 1}}, nullptr);
  EXPECT_EQ(f.status, "ran") << f.reason;
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_TRUE(f.allreduce.empty());
  ASSERT_EQ(f.skipped.size(), 1u);
  EXPECT_EQ(f.skipped[0], "the NCCL all-reduce: it needs 2 or more GPUs and CUDA shows 1");
  bool said = false;
  for (const auto& x : probes::judge_gpu_active(f))
    said |= x.code == "gpu_active.skipped" && x.message.find("needs 2 or more GPUs") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_EQ(probes::to_json(f)["skipped"], Json::array({f.skipped[0]}));
}

TEST_F(FakeBench, AChildThatHangsIsKilledAtTheSilenceTimeout) {
  std::string hang =
      script(std::string(kHello) +
             "\necho 'STEP {\"gpu\":1,\"step\":\"gemm_bf16\"}' >&3\n"
             "echo 'FIGURE {\"gpu\":0,\"step\":\"gemm_bf16\",\"value\":700,\"iters\":50}' >&3\n"
             "exec sleep 1000");
  probes::GpuActiveFacts f = run(hang, /*silence_ms=*/700, /*budget_ms=*/20000);
  EXPECT_EQ(f.status, "incomplete");
  EXPECT_EQ(f.error, "timeout");
  EXPECT_EQ(f.stopped_at, "GPU 1 gemm_bf16");
  EXPECT_NE(f.reason.find("wrote nothing for 0.7 s during GPU 1 gemm_bf16"), std::string::npos)
      << f.reason;
  EXPECT_EQ(f.bench_exit, "killed by signal 9");
  EXPECT_LT(elapsed_ms_, 5000) << "the hung child must be killed at the deadline, not waited for";
  // What it measured before the hang stays.
  EXPECT_DOUBLE_EQ(*f.gpus[0].figure("gemm_bf16")->measured, 700);
  // Judged: a hang is a fail (a Slurm health check drains the node).
  auto findings = probes::judge_gpu_active(f);
  bool hung = false;
  for (const auto& x : findings)
    hung = hung || (x.code == "gpu_active.hung" && x.severity == Severity::kFail);
  EXPECT_TRUE(hung);
}

TEST_F(FakeBench, TheBudgetDeadlineStopsAChildThatIsStillWorking) {
  // One line every 200 ms, forever: never silent, but over budget.
  std::string slow =
      script(std::string(kHello) +
             "\nwhile true; do echo 'STEP {\"gpu\":0,\"step\":\"h2d\"}' >&3; sleep 0.2; done");
  probes::GpuActiveFacts f = run(slow, /*silence_ms=*/5000, /*budget_ms=*/1200);
  EXPECT_EQ(f.status, "incomplete");
  EXPECT_EQ(f.error, "budget");
  EXPECT_NE(f.reason.find("time budget ran out during GPU 0 h2d"), std::string::npos) << f.reason;
  EXPECT_LT(elapsed_ms_, 4000);
}

TEST_F(FakeBench, MalformedLinesEndTheRunWithAProtocolError) {
  struct Case {
    std::string body, says;
  };
  const Case cases[] = {
      {R"(echo 'HELLO {"protocol":1,"devices":"all"}' >&3; sleep 5)",
       "\"devices\" is not an array"},
      {R"(echo 'rm -rf /' >&3; sleep 5)", "unknown line 'rm -rf /'"},
      {std::string(kHello) + "\n" +
           R"(echo 'FIGURE {"gpu":7,"step":"h2d","value":1,"iters":1}' >&3; sleep 5)",
       "FIGURE for GPU 7, not in HELLO"},
      {R"(echo 'STEP {"gpu":0,"step":"gemm_bf16"}' >&3; sleep 5)", "STEP before HELLO"},
      {std::string(kHello) + "\n" + kHello + "; sleep 5", "a second HELLO"},
      {std::string(kHello) + "\n" +
           R"(echo 'FIGURE {"gpu":0,"step":"h2d","value":1,"iters":1}' >&3; )" +
           R"(echo 'FIGURE {"gpu":0,"step":"h2d","value":2,"iters":1}' >&3; sleep 5)",
       "a second h2d figure for GPU 0"},
  };
  for (const auto& c : cases) {
    probes::GpuActiveFacts f = run(script(c.body));
    EXPECT_EQ(f.status, "incomplete") << c.body;
    EXPECT_EQ(f.error, "child_protocol") << c.body;
    EXPECT_NE(f.reason.find(c.says), std::string::npos)
        << "'" << f.reason << "' should say '" << c.says << "'";
    EXPECT_EQ(f.bench_exit, "killed by signal 9")
        << "a child that broke the protocol is not waited for";
    EXPECT_LT(elapsed_ms_, 3000);
  }
}

TEST_F(FakeBench, AnOversizedLineIsRefusedWithoutReadingItAll) {
  // 1 MiB without a newline, then it would go on forever.
  probes::GpuActiveFacts f = run(script("head -c 1048576 /dev/zero | tr '\\000' 'a' >&3; sleep 5"));
  EXPECT_EQ(f.status, "incomplete");
  EXPECT_EQ(f.error, "child_protocol");
  EXPECT_NE(f.reason.find("a line over 65536 bytes"), std::string::npos) << f.reason;
}

TEST_F(FakeBench, ATruncatedLineIsNamedAsSuch) {
  probes::GpuActiveFacts f =
      run(script(std::string(kHello) +
                 "\nprintf 'FIGURE {\"gpu\":0,\"st' >&3\necho 'CUDA error log line'\nexit 0"));
  EXPECT_EQ(f.status, "incomplete");
  EXPECT_EQ(f.error, "child_protocol");
  EXPECT_NE(f.reason.find("ended mid-line (19 bytes without a newline, a truncated frame)"),
            std::string::npos)
      << f.reason;
  EXPECT_NE(f.reason.find("its log ends: CUDA error log line"), std::string::npos) << f.reason;
}

TEST_F(FakeBench, AChildThatDiesIsNamedWithItsSignal) {
  probes::GpuActiveFacts f = run(script(
      std::string(kHello) + "\necho 'STEP {\"gpu\":0,\"step\":\"d2h\"}' >&3\nkill -SEGV $$"));
  EXPECT_EQ(f.status, "incomplete");
  EXPECT_EQ(f.error, "child_died");
  EXPECT_NE(f.reason.find("ended during GPU 0 d2h before DONE (killed by signal 11)"),
            std::string::npos)
      << f.reason;
  // DONE but a non-zero exit is not a clean run either.
  probes::GpuActiveFacts g = run(script(std::string(kHello) + "\necho DONE >&3\nexit 3"));
  EXPECT_EQ(g.status, "incomplete");
  EXPECT_NE(g.reason.find("said DONE but ended with exit status 3"), std::string::npos) << g.reason;
}

TEST_F(FakeBench, UnavailableAndFailedAndMissingProgram) {
  probes::GpuActiveFacts u = run(script(
      "echo 'UNAVAILABLE no CUDA device/driver: cudaGetDeviceCount: cudaErrorNoDevice' >&3"));
  EXPECT_EQ(u.status, "unavailable");
  EXPECT_EQ(u.reason, "no CUDA device/driver: cudaGetDeviceCount: cudaErrorNoDevice");
  EXPECT_EQ(u.bench_exit, "exit status 0");
  probes::GpuActiveFacts x =
      run(script("echo 'FAILED bad_device --devices names CUDA device 9, 2 visible' >&3; exit 1"));
  EXPECT_EQ(x.status, "incomplete");
  EXPECT_EQ(x.error, "bad_device");
  probes::GpuActiveFacts m = run(dir_ + "/no-such-bench");
  EXPECT_EQ(m.status, "unavailable");
  EXPECT_EQ(m.error, "bench_not_started");
  EXPECT_NE(m.reason.find("no-such-bench"), std::string::npos) << m.reason;
}

}  // namespace
}  // namespace fabkit::fabric
