// The active check's judge on facts: healthy figures pass; each figure below the warn and fail
// fractions is named with its expectation and basis; the PCIe link as trained under load explains
// a slow copy; concurrent copies show sharing; failed steps, hangs, all-reduce results.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/report.h"
#include "probes/gpu_active/gpu_active_facts.h"
#include "probes/gpu_active/gpu_perf_model.h"

namespace fabkit::probes {
namespace {

ActiveFigure fig(const char* name, double v) {
  ActiveFigure f;
  f.name = name;
  f.measured = v;
  f.iters = 10;
  f.elapsed_ms = 50;
  return f;
}

// A healthy H100 SXM5 at Gen5 x16: every figure at or above its expectation.
ActiveGpu h100(int index, double gemm = 750, double h2d = 54) {
  ActiveGpu g;
  g.cuda_index = index;
  g.name = "NVIDIA H100 80GB HBM3";
  g.bus_id = "0000:1" + std::to_string(index) + ":00.0";
  g.link_under_load = {5, 16};
  g.link_max = {5, 16};
  g.upstream_max = {5, 16};
  g.figures = {fig(kFigureGemm, gemm),        fig(kFigureDeviceCopy, 2950),
               fig(kFigureH2d, h2d),          fig(kFigureD2h, 55),
               fig(kFigureH2dConcurrent, 53), fig(kFigureD2hConcurrent, 54)};
  return g;
}

ActiveAllreduce allreduce(const char* algo, double busbw, int ranks = 8) {
  ActiveAllreduce a;
  a.algorithm = algo;
  a.status = "ok";
  a.ranks = ranks;
  a.bytes = 1ull << 30;
  a.busbw_gb_per_s = busbw;
  a.algbw_gb_per_s = busbw * ranks / (2.0 * (ranks - 1));
  return a;
}

GpuActiveFacts healthy_node() {
  GpuActiveFacts f;
  f.status = "ran";
  f.elapsed_ms = 14200;
  for (int i = 0; i < 8; ++i) f.gpus.push_back(h100(i));
  f.allreduce = {allreduce("default", 478), allreduce("Ring", 365)};
  return f;
}

std::vector<Finding> with_code(const std::vector<Finding>& all, const std::string& code) {
  std::vector<Finding> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out),
               [&](const Finding& f) { return f.code == code; });
  return out;
}

TEST(GpuActiveJudge, HealthyNodeHasOnlyTheSummary) {
  auto findings = judge_gpu_active(healthy_node());
  ASSERT_EQ(findings.size(), 1u) << findings[1].code << ": " << findings[1].message;
  EXPECT_EQ(findings[0].code, "gpu_active.ran");
  EXPECT_EQ(findings[0].severity, Severity::kInfo);
  EXPECT_NE(findings[0].message.find("8 GPU(s) measured in 14.2 s"), std::string::npos)
      << findings[0].message;
}

TEST(GpuActiveJudge, LowGemmWarnsThenFailsWithTheBasis) {
  GpuActiveFacts f = healthy_node();
  f.gpus[3] = h100(3, /*gemm=*/500);  // 500 / 742.05 = 67%: warn
  f.gpus[4] = h100(4, /*gemm=*/300);  // 40%: fail
  auto low = with_code(judge_gpu_active(f), "gpu_active.gemm_low");
  ASSERT_EQ(low.size(), 2u);
  EXPECT_EQ(low[0].severity, Severity::kWarn);
  EXPECT_EQ(low[0].subject, "GPU 3 (0000:13:00.0)");
  EXPECT_NE(
      low[0].message.find(
          "reached 500.0 TFLOPS, 67% of the expected 742.0 TFLOPS (H100 SXM5 80GB datasheet 989.4"),
      std::string::npos)
      << low[0].message;
  EXPECT_NE(low[0].fix.find("nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE -i 3"),
            std::string::npos)
      << low[0].fix;
  EXPECT_EQ(low[1].severity, Severity::kFail);
  EXPECT_EQ(exit_code_for(judge_gpu_active(f)), kExitFindings);
}

TEST(GpuActiveJudge, AGen4X8LinkUnderLoadExplainsASlowCopy) {
  GpuActiveFacts f = healthy_node();
  f.gpus[5].link_under_load = {4, 8};
  for (auto& x : f.gpus[5].figures)
    if (x.name == kFigureH2d) x.measured = 13.1;
  auto all = judge_gpu_active(f);
  auto low = with_code(all, "gpu_active.host_copy_low");
  ASSERT_EQ(low.size(), 1u);
  EXPECT_EQ(low[0].severity, Severity::kFail);  // 13.1 of 53.6: 24%
  EXPECT_NE(
      low[0].message.find("the link ran at Gen4 x8 under load, which carries at most ~13.4 GB/s"),
      std::string::npos)
      << low[0].message;
  EXPECT_NE(low[0].fix.find("lspci -vv -s 0000:15:00.0"), std::string::npos) << low[0].fix;
  auto degraded = with_code(all, "gpu_active.pcie_link_degraded");
  ASSERT_EQ(degraded.size(), 1u);
  EXPECT_EQ(degraded[0].severity, Severity::kWarn);
  EXPECT_NE(degraded[0].message.find("ran at Gen4 x8 while the GPU and its upstream port can train "
                                     "Gen5 x16 (15.8 of 63.0 GB/s)"),
            std::string::npos)
      << degraded[0].message;
}

TEST(GpuActiveJudge, AGpuBehindASlowerPortIsNotDegraded) {
  // Gen5 GPU in a Gen4 slot: the port is the ceiling, the link trained to it.
  GpuActiveFacts f = healthy_node();
  f.gpus[0].upstream_max = {4, 16};
  f.gpus[0].link_under_load = {4, 16};
  for (auto& x : f.gpus[0].figures)
    if (x.name == kFigureH2d || x.name == kFigureD2h) x.measured = 26.5;
  auto all = judge_gpu_active(f);
  EXPECT_TRUE(with_code(all, "gpu_active.pcie_link_degraded").empty());
  EXPECT_TRUE(with_code(all, "gpu_active.host_copy_low").empty());  // 26.5 of 26.8: 99%
}

TEST(GpuActiveJudge, ConcurrentCopiesBelowAloneShowSharing) {
  GpuActiveFacts f = healthy_node();
  for (auto& x : f.gpus[2].figures)
    if (x.name == kFigureH2dConcurrent) x.measured = 27;
  auto shared = with_code(judge_gpu_active(f), "gpu_active.pcie_shared");
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared[0].severity, Severity::kInfo);
  EXPECT_NE(shared[0].message.find("h2d with every GPU copying at once reached 27.0 GB/s, 50% of "
                                   "the 54.0 GB/s it reached alone"),
            std::string::npos)
      << shared[0].message;
}

TEST(GpuActiveJudge, UnknownSkuIsAnInfoAndItsCopiesAreStillJudgedOnTheLink) {
  GpuActiveFacts f = healthy_node();
  f.gpus = {h100(0)};
  f.gpus[0].name = "NVIDIA H800";
  f.gpus[0].figures[2].measured = 20;  // h2d on a Gen5 x16 link
  f.allreduce.clear();
  auto all = judge_gpu_active(f);
  auto unknown = with_code(all, "gpu_active.unknown_sku");
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0].severity, Severity::kInfo);
  EXPECT_NE(unknown[0].message.find("no entry for 'NVIDIA H800'"), std::string::npos);
  EXPECT_TRUE(with_code(all, "gpu_active.gemm_low").empty());  // no expectation: not judged
  EXPECT_EQ(with_code(all, "gpu_active.host_copy_low").size(), 1u);
  Json j = to_json(f);
  EXPECT_TRUE(j["gpus"][0]["sku"].is_null());
  EXPECT_TRUE(j["gpus"][0]["figures"][0]["expected"].is_null());
  EXPECT_EQ(j["gpus"][0]["figures"][0]["basis"], "no entry in the expected-performance model");
}

TEST(GpuActiveJudge, FailedStepsAreNamedByKind) {
  GpuActiveFacts f = healthy_node();
  f.gpus[1].figures[0] = {kFigureGemm, std::nullopt,
                          "cublasGemmEx(...): CUBLAS_STATUS_EXECUTION_FAILED (13)", "cublas_error"};
  f.gpus[1].figures[1] = {kFigureDeviceCopy, std::nullopt, "not run: gemm_bf16 failed on this GPU",
                          "not_run"};
  f.gpus[2].figures[0] = {kFigureGemm, std::nullopt,
                          "bf16 GEMM result C[1,2] = 5, the host computes 1", "wrong_result"};
  f.gpus[6].figures[0] = {kFigureGemm, std::nullopt,
                          "cudaMalloc(A): cudaErrorMemoryAllocation: out of memory",
                          "out_of_memory"};
  auto all = judge_gpu_active(f);
  auto failed = with_code(all, "gpu_active.step_failed");
  ASSERT_EQ(failed.size(), 1u);  // not_run adds nothing: its cause is reported
  EXPECT_EQ(failed[0].severity, Severity::kFail);
  EXPECT_NE(failed[0].message.find("CUBLAS_STATUS_EXECUTION_FAILED"), std::string::npos);
  ASSERT_EQ(with_code(all, "gpu_active.wrong_result").size(), 1u);
  EXPECT_EQ(with_code(all, "gpu_active.wrong_result")[0].severity, Severity::kFail);
  ASSERT_EQ(with_code(all, "gpu_active.gpu_busy").size(), 1u);
  EXPECT_EQ(with_code(all, "gpu_active.gpu_busy")[0].severity, Severity::kWarn);
}

TEST(GpuActiveJudge, AllreduceAgainstNvlink) {
  GpuActiveFacts f = healthy_node();
  f.allreduce = {allreduce("default", 478), allreduce("Ring", 250), allreduce("Ring", 150)};
  auto low = with_code(judge_gpu_active(f), "gpu_active.allreduce_low");
  ASSERT_EQ(low.size(), 2u);                    // 478 of 360 is NVLS at 133%: fine
  EXPECT_EQ(low[0].severity, Severity::kWarn);  // 250 / 360 = 69%
  EXPECT_NE(low[0].message.find("busbw 250.0 GB/s at 1024 MiB, 69% of the expected 360.0 GB/s "
                                "(H100 SXM5 80GB NVLink 450"),
            std::string::npos)
      << low[0].message;
  EXPECT_EQ(low[1].severity, Severity::kFail);  // 42%
  Json j = to_json(f);
  EXPECT_EQ(j["allreduce"][0]["verdict"], "ok");
  EXPECT_EQ(j["allreduce"][1]["verdict"], "warn");
  EXPECT_EQ(j["allreduce"][2]["verdict"], "fail");
  EXPECT_TRUE(j["allreduce"][0]["nccl_algo"].is_null());
  EXPECT_EQ(j["allreduce"][1]["nccl_algo"], "Ring");
}

TEST(GpuActiveJudge, AllreduceFailuresAndUnavailability) {
  GpuActiveFacts f = healthy_node();
  ActiveAllreduce bad;
  bad.algorithm = "default";
  bad.status = "failed";
  bad.error = "timeout";
  bad.reason = "rank(s) 3 had no result after 30 s";
  bad.ranks = 8;
  ActiveAllreduce none = bad;
  none.algorithm = "Ring";
  none.status = "unavailable";
  none.reason = "fabcheck-nccl-runner not found";
  f.allreduce = {bad, none};
  auto all = judge_gpu_active(f);
  auto failed = with_code(all, "gpu_active.allreduce_failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].severity, Severity::kFail);
  EXPECT_NE(failed[0].message.find("(timeout): rank(s) 3 had no result"), std::string::npos);
  ASSERT_EQ(with_code(all, "gpu_active.allreduce_unavailable").size(), 1u);
  EXPECT_EQ(with_code(all, "gpu_active.allreduce_unavailable")[0].severity, Severity::kInfo);
}

TEST(GpuActiveJudge, HungIsAFailBudgetIsAWarnUnavailableIsInfo) {
  GpuActiveFacts hung = healthy_node();
  hung.status = "incomplete";
  hung.error = "timeout";
  hung.reason = "fabcheck-gpu-bench wrote nothing for 60 s during GPU 2 gemm_bf16";
  hung.stopped_at = "GPU 2 gemm_bf16";
  auto h = with_code(judge_gpu_active(hung), "gpu_active.hung");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].severity, Severity::kFail);
  EXPECT_NE(h[0].message.find("it was running GPU 2 gemm_bf16"), std::string::npos);

  GpuActiveFacts budget = healthy_node();
  budget.status = "incomplete";
  budget.error = "budget";
  budget.reason = "the check's time budget ran out";
  auto b = with_code(judge_gpu_active(budget), "gpu_active.incomplete");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].severity, Severity::kWarn);
  EXPECT_NE(b[0].fix.find("--active-budget-s"), std::string::npos);

  GpuActiveFacts none;
  none.status = "unavailable";
  none.reason = "no NVIDIA driver: libnvidia-ml.so.1: cannot open shared object file";
  auto u = judge_gpu_active(none);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].code, "gpu_active.unavailable");
  EXPECT_EQ(u[0].severity, Severity::kInfo);
  EXPECT_EQ(exit_code_for(u), kExitClean);
}

TEST(GpuActiveJudge, JsonCarriesExpectationFractionBasisAndVerdict) {
  GpuActiveFacts f = healthy_node();
  f.gpus[0].figures[0].measured = 600;
  Json j = to_json(f);
  const Json& g = j["gpus"][0];
  EXPECT_EQ(g["sku"], "h100-sxm5-80gb");
  EXPECT_EQ(g["pcie"]["capable"]["generation"], 5);
  const Json& gemm = g["figures"][0];
  EXPECT_EQ(gemm["name"], "gemm_bf16");
  EXPECT_EQ(gemm["unit"], "TFLOPS");
  EXPECT_NEAR(gemm["expected"].get<double>(), 742.05, 1e-6);
  EXPECT_NEAR(gemm["fraction"].get<double>(), 600 / 742.05, 1e-6);
  EXPECT_EQ(gemm["verdict"], "warn");
  // Concurrent copies are shown with a fraction but never judged.
  EXPECT_TRUE(g["figures"][4]["verdict"].is_null());
  EXPECT_TRUE(g["figures"][4]["fraction"].is_number());
  EXPECT_EQ(j["settings"]["gemm_n"], 8192);
  EXPECT_EQ(j["settings"]["budget_s"], 180.0);
}

}  // namespace
}  // namespace fabkit::probes
