// The active check on this machine, for real: fabcheck-gpu-bench, the intra-node all-reduce
// through fabcheck-nccl-runner, and the whole gather. Whether a GPU exists is asked of NVML (the
// node probe), never assumed: on a GPU machine these tests measure and must pass; on a machine
// without one the GPU tests skip with NVML's reason and the no-GPU tests check "unavailable".
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "common/environment.h"
#include "common/report.h"
#include "fabric/gpu_active/bench_runner.h"
#include "fabric/gpu_active/gpu_active_check.h"
#include "fabric/nccl_runner/local_allreduce.h"
#include "probes/gpu/gpu_facts.h"
#include "probes/probe_context.h"

namespace fabkit::fabric {
namespace {

struct GpuHere {
  int count = 0;  // GPUs CUDA will show (NVML's, unless CUDA_VISIBLE_DEVICES hides them all)
  std::vector<std::string> names, bus_ids;
  std::string why_none;
  Json section;  // the node report's gpus section
};

GpuHere gpus_here() {
  ProbeContext ctx;
  ctx.roots = SystemRoots::live_system("");
  ctx.env = Environment::from_process();
  probes::GpuFacts f = probes::gather_gpu(ctx);
  GpuHere g;
  g.count = f.count;
  for (const auto& d : f.devices) {
    g.names.push_back(d.name);
    g.bus_ids.push_back(d.bus_id);
  }
  g.section = probes::to_json(f);
  g.why_none = f.driver_loaded ? "NVML lists 0 GPUs" : f.nvml_error.value_or("no NVIDIA driver");
  if (const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
      cvd && (*cvd == '\0' || std::string(cvd) == "-1")) {
    g.count = 0;
    g.why_none = "CUDA_VISIBLE_DEVICES hides every GPU";
  }
  return g;
}

// Small enough for seconds per GPU, large enough to exercise every path.
probes::GpuActiveSettings quick_settings() {
  probes::GpuActiveSettings s;
  s.gemm_n = 4096;
  s.gemm_warmup = 3;
  s.gemm_iters = 10;
  s.device_copy_bytes = 128ull << 20;
  s.device_copy_iters = 10;
  s.host_copy_bytes = 64ull << 20;
  s.host_copy_iters = 5;
  s.allreduce_bytes = 64ull << 20;
  s.allreduce_iters = 5;
  s.budget_s = 240;
  return s;
}

std::vector<std::string> process_env() {
  std::vector<std::string> env;
  Environment process = Environment::from_process();
  for (const auto& [k, v] : process.vars()) env.push_back(k + "=" + v);
  return env;
}

#ifdef FABKIT_TEST_GPU_BENCH
probes::GpuActiveFacts run_real_bench() {
  BenchRun r;
  r.program = FABKIT_TEST_GPU_BENCH;
  r.args = bench_args(quick_settings(), "/sys");
  r.env = process_env();
  r.deadline = wire::deadline_in_ms(180000);
  r.silence_timeout_ms = 60000;
  probes::GpuActiveFacts f;
  run_gpu_bench(r, &f);
  return f;
}

TEST(GpuBenchLive, WithoutGpuSaysUnavailableAndExitsZero) {
  GpuHere gpu = gpus_here();
  if (gpu.count > 0)
    GTEST_SKIP() << "this machine has " << gpu.count
                 << " GPU(s): GpuBenchLive.MeasuresEveryGpu runs instead";
  probes::GpuActiveFacts f = run_real_bench();
  EXPECT_EQ(f.status, "unavailable") << f.reason;
  EXPECT_NE(f.reason.find("no CUDA device/driver: cudaGetDeviceCount: cuda"), std::string::npos)
      << f.reason;
  EXPECT_EQ(f.bench_exit, "exit status 0");
}

TEST(GpuBenchLive, MeasuresEveryGpu) {
  GpuHere gpu = gpus_here();
  if (gpu.count == 0) GTEST_SKIP() << "needs an NVIDIA GPU: " << gpu.why_none;
  probes::GpuActiveFacts f = run_real_bench();
  ASSERT_EQ(f.status, "ran") << f.error << ": " << f.reason;
  EXPECT_EQ(f.bench_exit, "exit status 0");
  // CUDA_VISIBLE_DEVICES may show fewer GPUs than NVML; never more, and the same boards.
  ASSERT_FALSE(f.gpus.empty());
  EXPECT_LE(f.gpus.size(), static_cast<size_t>(gpu.count));
  std::set<std::string> nvml_bus(gpu.bus_ids.begin(), gpu.bus_ids.end());
  for (const auto& g : f.gpus) {
    EXPECT_TRUE(nvml_bus.count(g.bus_id)) << g.bus_id << " is not a GPU NVML lists";
    for (const char* name :
         {probes::kFigureGemm, probes::kFigureDeviceCopy, probes::kFigureH2d, probes::kFigureD2h}) {
      const probes::ActiveFigure* fig = g.figure(name);
      ASSERT_NE(fig, nullptr) << g.bus_id << " has no " << name;
      ASSERT_TRUE(fig->measured) << g.bus_id << " " << name << ": " << fig->error;
      EXPECT_GT(*fig->measured, 0) << name;
    }
    if (f.gpus.size() > 1) {
      EXPECT_NE(g.figure(probes::kFigureH2dConcurrent), nullptr);
    }
    // A GPU behind a PCIe link shows the link it trained under load (VMs may hide sysfs links).
    if (g.link_under_load.generation) {
      EXPECT_GE(*g.link_under_load.generation, 1);
    }
    std::cout << "[ measured ] GPU " << g.cuda_index << " " << g.name << " " << g.bus_id
              << ": gemm " << *g.figure(probes::kFigureGemm)->measured << " TFLOPS, d2d "
              << *g.figure(probes::kFigureDeviceCopy)->measured << " GB/s, h2d "
              << *g.figure(probes::kFigureH2d)->measured << " GB/s, d2h "
              << *g.figure(probes::kFigureD2h)->measured << " GB/s, link "
              << topo::to_string(g.link_under_load) << "\n";
  }
}
#endif

#ifdef FABKIT_TEST_NCCL_RUNNER
TEST(LocalAllreduceLive, OverEveryGpuOrCleanlyUnavailable) {
  GpuHere gpu = gpus_here();
  LocalAllreduceSpec s;
  s.runner_path = FABKIT_TEST_NCCL_RUNNER;
  s.ranks = std::max(gpu.count, 2);
  s.bytes = 64ull << 20;
  s.iters = 5;
  s.timeout_ms = gpu.count > 0 ? 120000 : 15000;
  if (gpu.count == 1) s.ranks = 1;  // one rank: algbw only (busbw = 0 at n = 1)
  TransportRun r = run_local_allreduce(s);
  if (gpu.count == 0) {
    EXPECT_EQ(r.status, "unavailable") << r.reason;
    EXPECT_NE(r.reason.find("no CUDA device/driver"), std::string::npos) << r.reason;
    return;
  }
  ASSERT_EQ(r.status, "ok") << r.extra.value("error", "") << ": " << r.reason << " "
                            << r.extra.dump();
  ASSERT_EQ(r.sizes.size(), 1u);
  EXPECT_TRUE(r.sizes[0].correct);
  EXPECT_GT(r.sizes[0].algbw_gbps, 0);
  if (s.ranks > 1) {
    EXPECT_GT(r.sizes[0].busbw_gbps, 0);
  }
  EXPECT_GE(r.extra["nccl_version"].get<int>(), 21800);
  std::cout << "[ measured ] all-reduce " << s.ranks << " ranks, 64 MiB: busbw "
            << r.sizes[0].busbw_gbps << " GB/s, algbw " << r.sizes[0].algbw_gbps << " GB/s\n";
}
#endif

TEST(GpuActiveLive, TheWholeCheckRunsOrSaysUnavailable) {
  GpuHere gpu = gpus_here();
  GpuActiveOptions o;
  o.settings = quick_settings();
#ifdef FABKIT_TEST_GPU_BENCH
  o.bench_path = FABKIT_TEST_GPU_BENCH;
#endif
#ifdef FABKIT_TEST_NCCL_RUNNER
  o.runner_path = FABKIT_TEST_NCCL_RUNNER;
#endif
  probes::GpuActiveFacts f = gather_gpu_active(o, SystemRoots::live_system(""),
                                               Environment::from_process(), gpu.section, nullptr);
  auto findings = probes::judge_gpu_active(f);
  if (gpu.count == 0) {
    EXPECT_EQ(f.status, "unavailable");
    EXPECT_FALSE(f.reason.empty());
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].code, "gpu_active.unavailable");
    EXPECT_EQ(exit_code_for(findings), kExitClean) << "no GPU is an info fact, not a fault";
    return;
  }
#ifndef FABKIT_TEST_GPU_BENCH
  GTEST_FAIL() << "NVML lists " << gpu.count
               << " GPU(s) but fabcheck-gpu-bench was not built (CUDA/cuBLAS not found)";
#endif
  ASSERT_EQ(f.status, "ran") << f.error << ": " << f.reason;
  for (const auto& g : f.gpus) EXPECT_GE(g.figures.size(), 4u) << g.bus_id;
  if (f.gpus.size() >= 2) {
    ASSERT_EQ(f.allreduce.size(), 2u);
    for (const auto& a : f.allreduce) {
      EXPECT_EQ(a.status, "ok") << a.algorithm << ": " << a.error << " " << a.reason;
      EXPECT_GT(a.busbw_gb_per_s.value_or(0), 0) << a.algorithm;
    }
  }
  Json j = probes::to_json(f);
  std::cout << "[ measured ] " << j.dump(1) << "\n";
  for (const auto& x : findings)
    std::cout << "[ finding ] " << to_string(x.severity) << " " << x.code << " " << x.subject
              << ": " << x.message << "\n";
}

}  // namespace
}  // namespace fabkit::fabric
