#include <gtest/gtest.h>

#include "fabkit/config.h"
#include "probes/gpu/gpu_facts.h"
#include "tests/support/ttar.h"

namespace fabkit::probes {
namespace {

TEST(GpuProbe, RunsHereAndFindsNoDevice) {
  ProbeContext ctx;
  ctx.roots = SystemRoots::live_system("");
  GpuFacts f = gather_gpu(ctx);
  EXPECT_EQ(f.built_with_cuda, FABKIT_HAVE_CUDA == 1);
  if (f.count > 0) GTEST_SKIP() << "this node has CUDA devices";
  EXPECT_TRUE(f.devices.empty());
  auto fs = judge_gpu(f, 0);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kInfo);
#if FABKIT_HAVE_CUDA
  // No libcuda.so / no device: the runtime's error name is reported, not a crash.
  ASSERT_TRUE(f.error_name);
  EXPECT_TRUE(*f.error_name == "cudaErrorInsufficientDriver" ||
              *f.error_name == "cudaErrorNoDevice")
      << *f.error_name;
  EXPECT_EQ(fs[0].code, "gpu.none");
  EXPECT_LT(f.query_ms, 2000.0);
#else
  EXPECT_EQ(fs[0].code, "gpu.built_without_cuda");
#endif
  Json j = to_json(f);
  EXPECT_EQ(j["count"], 0);
  EXPECT_TRUE(j["devices"].empty());
}

TEST(GpuProbe, SysrootSkipsCuda) {
  testing::TempDir root("gpu-sysroot");
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(root.path());
  GpuFacts f = gather_gpu(ctx);
  auto fs = judge_gpu(f, std::nullopt);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, FABKIT_HAVE_CUDA ? "gpu.skipped" : "gpu.built_without_cuda");
}

TEST(GpuJudge, BuiltWithoutCuda) {
  GpuFacts f;
  auto fs = judge_gpu(f, 8);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "gpu.built_without_cuda");
  EXPECT_EQ(to_json(f)["built_with_cuda"], false);
}

TEST(GpuJudge, NoDriverButGpusOnThePciBusWarns) {
  GpuFacts f;
  f.built_with_cuda = true;
  f.error_name = "cudaErrorInsufficientDriver";
  f.error_string = "CUDA driver version is insufficient for CUDA runtime version";
  auto fs = judge_gpu(f, 8);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "gpu.cuda_error");
  EXPECT_EQ(fs[0].severity, Severity::kWarn);
  EXPECT_NE(fs[0].message.find("8 GPU(s) are on the PCI bus"), std::string::npos);
  EXPECT_EQ(judge_gpu(f, 0)[0].code, "gpu.none");
}

TEST(GpuJudge, FewerCudaDevicesThanPciGpusWarns) {
  GpuFacts f;
  f.built_with_cuda = true;
  f.count = 4;
  f.driver = "12.4";
  f.cuda_visible_devices = "0,1,2,3";
  auto fs = judge_gpu(f, 8);
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].code, "gpu.found");
  EXPECT_EQ(fs[1].code, "gpu.count_mismatch");
  EXPECT_NE(fs[1].message.find("CUDA_VISIBLE_DEVICES=0,1,2,3"), std::string::npos);
  EXPECT_EQ(judge_gpu(f, 4).size(), 1u);
}

}  // namespace
}  // namespace fabkit::probes
