// The expected-performance model: every SKU of the table found by the names NVML and CUDA give
// it (and no neighbour's), the datasheet figures it holds, the expectations and their bases, and
// the PCIe basis for a link as trained.
#include <gtest/gtest.h>

#include <set>

#include "probes/gpu_active/gpu_perf_model.h"

namespace fabkit::probes {
namespace {

struct Lookup {
  const char* device_name;
  const char* sku_id;
  double bf16_dense_tflops;
  double memory_gb_per_s;
};

// The device names as NVML/nvidia-smi print them.
const Lookup kLookups[] = {
    {"NVIDIA H100 80GB HBM3", "h100-sxm5-80gb", 989.4, 3350},
    {"NVIDIA H100 PCIe", "h100-pcie-80gb", 756.5, 2000},
    {"NVIDIA H100 NVL", "h100-nvl-94gb", 835.5, 3900},
    {"NVIDIA H200", "h200-sxm-141gb", 989.4, 4800},
    {"NVIDIA H200 NVL", "h200-nvl-141gb", 835.5, 4800},
    {"NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb", 312, 1555},
    {"NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb", 312, 2039},
    {"NVIDIA A100-PCIE-40GB", "a100-pcie-40gb", 312, 1555},
    {"NVIDIA A100 80GB PCIe", "a100-pcie-80gb", 312, 1935},
    {"NVIDIA B200", "b200", 2250, 8000},
    {"NVIDIA GB200", "gb200", 2500, 8000},
    {"NVIDIA L40S", "l40s", 362.05, 864},
    {"NVIDIA L40", "l40", 181.05, 864},
    {"NVIDIA L4", "l4", 121, 300},
    {"NVIDIA A10", "a10", 125, 600},
    {"NVIDIA A30", "a30", 165, 933},
};

TEST(GpuPerfModel, EverySkuIsFoundByItsDeviceName) {
  std::set<std::string> seen;
  for (const auto& l : kLookups) {
    const GpuSku* sku = match_gpu_sku(l.device_name);
    ASSERT_NE(sku, nullptr) << l.device_name;
    EXPECT_EQ(sku->id, l.sku_id) << l.device_name;
    EXPECT_DOUBLE_EQ(sku->bf16_dense_tflops, l.bf16_dense_tflops) << l.device_name;
    EXPECT_DOUBLE_EQ(sku->memory_bandwidth_gb_per_s, l.memory_gb_per_s) << l.device_name;
    seen.insert(sku->id);
  }
  // Every entry of the table has a lookup above: a new SKU gets a test.
  for (const auto& sku : gpu_sku_table())
    EXPECT_TRUE(seen.count(sku.id)) << sku.id << " has no lookup test";
}

TEST(GpuPerfModel, NamesMatchExactlyAfterNormalisingNeverByPrefix) {
  EXPECT_EQ(normalize_gpu_name("  NVIDIA  A100-SXM4-80GB "), "a100 sxm4 80gb");
  EXPECT_EQ(match_gpu_sku("nvidia a100 sxm4 80gb")->id, "a100-sxm4-80gb");  // case, dashes
  EXPECT_EQ(match_gpu_sku("H100 80GB HBM3")->id, "h100-sxm5-80gb");         // no vendor prefix
  // "A10" is not any A100, "L4" is not the L40/L40S, "H200" is not the H200 NVL.
  EXPECT_EQ(match_gpu_sku("NVIDIA A10")->id, "a10");
  EXPECT_EQ(match_gpu_sku("NVIDIA L4")->id, "l4");
  EXPECT_EQ(match_gpu_sku("NVIDIA H200 NVL")->id, "h200-nvl-141gb");
  // Unknown boards have no entry: the judge says so instead of using a neighbour's figures.
  EXPECT_EQ(match_gpu_sku("NVIDIA H800"), nullptr);
  EXPECT_EQ(match_gpu_sku("NVIDIA GeForce RTX 4090"), nullptr);
  EXPECT_EQ(match_gpu_sku("Tesla V100-SXM2-32GB"), nullptr);
  EXPECT_EQ(match_gpu_sku(""), nullptr);
}

TEST(GpuPerfModel, GemmAndMemoryExpectationsApplyTheEfficiencyFactors) {
  const GpuSku* h100 = match_gpu_sku("NVIDIA H100 80GB HBM3");
  Expectation g = expected_gemm_tflops(h100);
  ASSERT_TRUE(g.value);
  EXPECT_NEAR(*g.value, 989.4 * 0.75, 1e-9);
  EXPECT_NE(g.basis.find("H100 SXM5 80GB datasheet 989.4 TFLOPS dense BF16 x 75%"),
            std::string::npos)
      << g.basis;
  Expectation m = expected_device_copy_gb_per_s(h100);
  EXPECT_NEAR(*m.value, 3350 * 0.85, 1e-9);
  EXPECT_NE(m.basis.find("read + write"), std::string::npos) << m.basis;
  // A card without a public matmul measurement says its factor is an assumption.
  EXPECT_NE(expected_gemm_tflops(match_gpu_sku("NVIDIA L4")).basis.find("assumed"),
            std::string::npos);
  EXPECT_FALSE(expected_gemm_tflops(nullptr).value);
  EXPECT_FALSE(expected_device_copy_gb_per_s(nullptr).value);
}

TEST(GpuPerfModel, PcieBasisForAGen4X8Link) {
  // Gen4: 16 GT/s, 128b/130b: 8 lanes carry 126.03 Gbit/s = 15.75 GB/s; x 0.85.
  Expectation e = expected_host_copy_on_link_gb_per_s({4, 8});
  ASSERT_TRUE(e.value);
  EXPECT_NEAR(*e.value, 16.0 * 8 * 128 / 130 / 8 * 0.85, 1e-9);
  EXPECT_NEAR(*e.value, 13.39, 0.01);
  EXPECT_NE(e.basis.find("PCIe Gen4 x8 data rate 15.8 GB/s x 85%"), std::string::npos) << e.basis;
  // Gen5 x16 (an H100's): 63.0 GB/s of data, ~53.6 expected.
  EXPECT_NEAR(*expected_host_copy_on_link_gb_per_s({5, 16}).value, 53.56, 0.01);
  EXPECT_FALSE(expected_host_copy_on_link_gb_per_s({std::nullopt, 16}).value);
}

TEST(GpuPerfModel, HostCopyUsesTheLinkSysfsAllowsBeforeTheDatasheet) {
  const GpuSku* h100 = match_gpu_sku("NVIDIA H100 80GB HBM3");
  // An H100 (Gen5 x16 on its datasheet) below a Gen4 x16 port: the port is the limit.
  topo::PcieLink capable = narrower_link({5, 16}, {4, 16});
  EXPECT_EQ(*capable.generation, 4);
  EXPECT_EQ(*capable.width, 16);
  Expectation e = expected_host_copy_gb_per_s(h100, capable);
  EXPECT_NEAR(*e.value, 31.5 * 0.85, 0.01);
  EXPECT_NE(e.basis.find("sysfs max_link"), std::string::npos) << e.basis;
  // sysfs silent: the datasheet's Gen5 x16.
  Expectation d = expected_host_copy_gb_per_s(h100, {});
  EXPECT_NEAR(*d.value, 53.56, 0.01);
  EXPECT_NE(d.basis.find("datasheet host interface"), std::string::npos) << d.basis;
  // An unknown half takes the other link's.
  EXPECT_EQ(*narrower_link({5, std::nullopt}, {std::nullopt, 8}).width, 8);
  // GB200 reaches the host over NVLink-C2C: no PCIe model, said so.
  Expectation gb = expected_host_copy_gb_per_s(match_gpu_sku("NVIDIA GB200"), {});
  EXPECT_FALSE(gb.value);
  EXPECT_NE(gb.basis.find("NVLink-C2C"), std::string::npos);
  // Unknown SKU, unknown link: no expectation, and why.
  EXPECT_FALSE(expected_host_copy_gb_per_s(nullptr, {}).value);
}

TEST(GpuPerfModel, AllreduceExpectedOnlyWhereNvlinkReachesEveryGpu) {
  Expectation h = expected_allreduce_busbw_gb_per_s(match_gpu_sku("NVIDIA H100 80GB HBM3"), 8);
  EXPECT_NEAR(*h.value, 450 * 0.80, 1e-9);
  EXPECT_NE(h.basis.find("NVLink 450 GB/s per direction x 80%"), std::string::npos) << h.basis;
  EXPECT_NEAR(*expected_allreduce_busbw_gb_per_s(match_gpu_sku("NVIDIA A100-SXM4-80GB"), 8).value,
              240, 1e-9);
  EXPECT_NEAR(*expected_allreduce_busbw_gb_per_s(match_gpu_sku("NVIDIA B200"), 8).value, 720, 1e-9);
  // PCIe cards and bridged NVL cards: not modelled, with the reason.
  Expectation l = expected_allreduce_busbw_gb_per_s(match_gpu_sku("NVIDIA L40S"), 4);
  EXPECT_FALSE(l.value);
  EXPECT_NE(l.basis.find("not modelled"), std::string::npos);
  EXPECT_FALSE(expected_allreduce_busbw_gb_per_s(match_gpu_sku("NVIDIA H100 NVL"), 2).value);
  EXPECT_FALSE(expected_allreduce_busbw_gb_per_s(match_gpu_sku("NVIDIA H100 80GB HBM3"), 1).value);
}

}  // namespace
}  // namespace fabkit::probes
