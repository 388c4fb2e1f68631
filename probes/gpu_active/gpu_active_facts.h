// The active GPU check's facts (`fabcheck node --active`): what fabcheck-gpu-bench measured on
// each GPU (bf16 GEMM, device memory copy, pinned host<->device copies alone and all at once, the
// PCIe link as trained under load) and what the intra-node NCCL all-reduce reached. Gathered in
// fabric/gpu_active (child processes), judged here against the expected-performance model
// (gpu_perf_model.h). Absent from the node report unless --active was given.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"
#include "topo/pcie_link.h"

namespace fabkit::probes {

// What the check measures, and how long: the sizes and iteration counts the bench child and the
// all-reduce run with (docs/gpu-node.md estimates the time on 8 GPUs from them).
struct GpuActiveSettings {
  int gemm_n = 8192;  // m = n = k
  int gemm_warmup = 10;
  int gemm_iters = 50;
  uint64_t device_copy_bytes = 512ull << 20;  // one buffer; a copy moves it twice (read + write)
  int device_copy_warmup = 5;
  int device_copy_iters = 50;
  uint64_t host_copy_bytes = 256ull << 20;  // pinned host buffer per GPU
  int host_copy_warmup = 3;
  int host_copy_iters = 10;
  uint64_t allreduce_bytes = 1ull << 30;
  int allreduce_warmup = 5;
  int allreduce_iters = 20;
  double budget_s = 180;  // the whole check: bench child and both all-reduce runs
};

// The figure names, in report order.
inline constexpr const char* kFigureGemm = "gemm_bf16";
inline constexpr const char* kFigureDeviceCopy = "device_copy";
inline constexpr const char* kFigureH2d = "h2d";
inline constexpr const char* kFigureD2h = "d2h";
inline constexpr const char* kFigureH2dConcurrent = "h2d_concurrent";
inline constexpr const char* kFigureD2hConcurrent = "d2h_concurrent";

struct ActiveFigure {
  std::string name;                // kFigure*
  std::optional<double> measured;  // TFLOPS (gemm_bf16) or GB/s (the copies)
  std::string error;               // the step failed: the CUDA/cuBLAS call and its error
  // "cuda_error", "cublas_error", "wrong_result", "out_of_memory", or "not_run" (an earlier step
  // of this GPU failed, which its own figure reports)
  std::string error_kind;
  int iters = 0;
  double elapsed_ms = 0;  // the timed iterations, CUDA events
};

struct ActiveGpu {
  int cuda_index = 0;
  std::string name;    // cudaDeviceProp::name (the same string NVML gives)
  std::string bus_id;  // normalised "dddd:bb:dd.f"
  std::optional<uint64_t> memory_bytes;
  topo::PcieLink link_under_load;     // sysfs current_link_* read while the H2D copy ran
  topo::PcieLink link_max;            // sysfs max_link_* of the GPU
  topo::PcieLink upstream_max;        // sysfs max_link_* of the port above it
  std::vector<ActiveFigure> figures;  // in kFigure* order, those that were measured or failed

  const ActiveFigure* figure(const std::string& name) const;
};

struct ActiveAllreduce {
  std::string algorithm;  // "default" (NCCL's choice) or "Ring" (NCCL_ALGO=Ring)
  std::string status;     // "ok", "failed", "unavailable", "skipped"
  std::string error;      // failed/unavailable: the kind (nccl_error, timeout, wrong_result…)
  std::string reason;
  int ranks = 0;
  uint64_t bytes = 0;
  std::optional<double> busbw_gb_per_s;  // the slowest rank's, as nccl-tests reports
  std::optional<double> algbw_gb_per_s;
  std::optional<double> time_us;
  std::optional<int> nccl_version;
  double elapsed_ms = 0;
};

struct GpuActiveFacts {
  // "ran": every step ran; "incomplete": it started but a step was cut short (reason, error);
  // "unavailable": nothing could run here (no GPU, driver, or bench binary), an info fact.
  std::string status = "unavailable";
  std::string reason;
  std::string error;       // incomplete/unavailable: "timeout", "child_died", "child_protocol"…
  std::string stopped_at;  // the step that was running when the bench child was stopped
  GpuActiveSettings settings;
  double elapsed_ms = 0;
  std::string bench_path;
  std::string bench_exit;  // "exit status 0", "killed by signal 9"
  std::optional<int> cuda_runtime_version, cuda_driver_version, cublas_version;
  std::optional<std::string> cuda_visible_devices;
  std::vector<ActiveGpu> gpus;
  std::vector<ActiveAllreduce> allreduce;
  std::vector<std::string> skipped;  // steps not run, each with why
};

// Pure: the facts against the model: per figure the expected value, its basis and the fraction,
// and the findings (gpu_active.* in docs/findings/gpu_active.md).
std::vector<Finding> judge_gpu_active(const GpuActiveFacts& facts);
// The `gpu_active` section of the node report (docs/json/gpu_active.md), expectations included.
Json to_json(const GpuActiveFacts& facts);

}  // namespace fabkit::probes
