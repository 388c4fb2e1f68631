// The expected-performance model of the active GPU check (`fabcheck node --active`): what a GPU
// of a known SKU should reach, per figure, from its public specification (the per-SKU table in
// gpu_perf_model.cc, each figure's source in a comment there) and from the PCIe link it actually
// trained, times a realistic-efficiency factor per kind of figure (documented below and in
// docs/gpu-node.md). Pure: no I/O, unit-tested on every entry.
//
// Units: TFLOPS (1e12 floating-point operations per second, a multiply-add counting two) and
// GB/s (1e9 bytes per second), the units NVIDIA's datasheets use.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "topo/pcie_link.h"

namespace fabkit::probes {

struct GpuSku {
  std::string id;     // stable key in the JSON report: "h100-sxm5-80gb"
  std::string label;  // "H100 SXM5 80GB"
  // The names NVML (nvmlDeviceGetName) and CUDA (cudaDeviceProp::name) give this SKU, compared
  // after normalize_gpu_name.
  std::vector<std::string> device_names;
  double bf16_dense_tflops = 0;          // datasheet BF16 Tensor Core, without sparsity
  double memory_bandwidth_gb_per_s = 0;  // datasheet GPU memory bandwidth
  int pcie_generation = 0;               // the host interface the datasheet names; 0 = not PCIe
  int pcie_width = 0;
  // Per GPU, one direction (the datasheets give both directions together: 900 GB/s = 450 each
  // way); 0 = no NVLink, or bridges whose pairing the name does not tell.
  double nvlink_gb_per_s_per_direction = 0;
  // Every GPU of the board reaches every other over NVLink (NVSwitch on HGX/DGX boards, the
  // NVL72 switch trays): the only boards whose all-reduce bandwidth the model predicts.
  bool nvlink_all_to_all = false;
  // Set when no public measurement of a matmul on this card backs kGemmEfficiency (the factor
  // is then an assumption for it; docs/gpu-node.md lists which).
  bool gemm_efficiency_unmeasured = false;
};

// Realistic-efficiency factors: the fraction of the specification a healthy GPU reaches in each
// measurement. Their sources and reasoning are in gpu_perf_model.cc and docs/gpu-node.md.
inline constexpr double kGemmEfficiency = 0.75;        // cuBLAS bf16 8192^3 vs dense datasheet
inline constexpr double kDeviceCopyEfficiency = 0.85;  // D2D copy (read + write) vs HBM spec
inline constexpr double kHostCopyEfficiency = 0.85;    // pinned H2D/D2H vs PCIe data rate
inline constexpr double kAllreduceEfficiency = 0.80;   // NCCL busbw vs NVLink per direction

// The judge's thresholds on measured / expected (gpu_active_judge.cc).
inline constexpr double kWarnBelowFraction = 0.85;
inline constexpr double kFailBelowFraction = 0.50;
// All GPUs copying at once, each below this fraction of what it reached alone: they share an
// upstream link (a PCIe switch or root port).
inline constexpr double kSharedBelowFraction = 0.80;

// Lower case, a leading "nvidia " dropped, '-' and '_' as blanks, runs of blanks as one:
// "NVIDIA A100-SXM4-80GB" -> "a100 sxm4 80gb".
std::string normalize_gpu_name(const std::string& name);
const std::vector<GpuSku>& gpu_sku_table();
// nullptr when the model has no entry for the name (an info finding says so; never a default).
const GpuSku* match_gpu_sku(const std::string& device_name);

// What one figure should reach on this GPU, and why. value is empty when the model cannot say
// (basis then says why).
struct Expectation {
  std::optional<double> value;
  std::string basis;
};

Expectation expected_gemm_tflops(const GpuSku* sku);
Expectation expected_device_copy_gb_per_s(const GpuSku* sku);
// The link the GPU can train: min(GPU's max_link_*, its upstream port's max_link_*) as read from
// sysfs, each half possibly unknown; the SKU's datasheet link when sysfs does not say.
Expectation expected_host_copy_gb_per_s(const GpuSku* sku, const topo::PcieLink& capable);
// The same for the link as trained under load (what the copy can reach on this link as it is).
Expectation expected_host_copy_on_link_gb_per_s(const topo::PcieLink& trained);
// NCCL all-reduce bus bandwidth over `gpus` GPUs of this SKU on one node.
Expectation expected_allreduce_busbw_gb_per_s(const GpuSku* sku, int gpus);

// The narrower of two link descriptions, half by half (an unknown half takes the other's).
topo::PcieLink narrower_link(const topo::PcieLink& a, const topo::PcieLink& b);

}  // namespace fabkit::probes
