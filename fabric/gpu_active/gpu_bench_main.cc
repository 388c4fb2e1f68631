// fabcheck-gpu-bench: the GPU side of `fabcheck node --active`, in its own process so that
// fabcheck never creates a CUDA context or loads cuBLAS, and a GPU that hangs is killed with this
// process at fabcheck's deadline (bench_runner.cc). Writes the protocol of bench_protocol.h on
// fd 3; stdout and stderr are a log.
//
// Per GPU, one after the other: a bf16 GEMM (cublasGemmEx, CUDA_R_16BF in and out,
// CUBLAS_COMPUTE_32F) with a spot check of eight results against the host; a device-to-device
// copy (bandwidth counted as read + write); pinned host->device and device->host copies, reading
// the PCIe link from sysfs while they run (an idle GPU may have trained down). Then the same
// copies on every GPU at once. Each figure is the timed iterations' total over CUDA events after
// warm-up iterations. A step that fails says so in its FIGURE and the next step runs.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <sched.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/json.h"
#include "fabric/gpu_active/bench_protocol.h"
#include "probes/gpu_active/gpu_active_facts.h"
#include "topo/pci_bus_id.h"

namespace {

using fabkit::Json;
namespace figure = fabkit::probes;

FILE* g_ctl = nullptr;

void say(const std::string& line) {
  std::fprintf(g_ctl, "%s\n", line.c_str());
  std::fflush(g_ctl);
}

struct Options {
  std::vector<int> devices;  // empty: every visible device
  int gemm_n = 8192, gemm_warmup = 10, gemm_iters = 50;
  uint64_t device_copy_bytes = 512ull << 20;
  int device_copy_warmup = 5, device_copy_iters = 50;
  uint64_t host_copy_bytes = 256ull << 20;
  int host_copy_warmup = 3, host_copy_iters = 10;
  std::string sysfs = "/sys";
  bool skip_concurrent = false;
};

// A failed step: what failed, and how fabcheck should weigh it.
struct StepError {
  std::string kind;  // "cuda_error", "cublas_error", "out_of_memory", "wrong_result"
  std::string text;
};

void cuda_check(cudaError_t e, const std::string& call) {
  if (e == cudaSuccess) return;
  // Clear a non-sticky error so the next step starts clean (a sticky one stays: every later call
  // on the device fails and says so).
  cudaGetLastError();
  throw StepError{e == cudaErrorMemoryAllocation ? "out_of_memory" : "cuda_error",
                  call + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e)};
}

const char* cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_?";
}

void cublas_check(cublasStatus_t s, const std::string& call) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw StepError{
      s == CUBLAS_STATUS_ALLOC_FAILED ? "out_of_memory" : "cublas_error",
      call + ": " + cublas_status_name(s) + " (" + std::to_string(static_cast<int>(s)) + ")"};
}

// RAII for the device and pinned buffers, streams and events of one step (the caller has made
// the buffer's device current).
struct DeviceBuffer {
  void* p = nullptr;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }
  void reset() {
    if (p) cudaFree(p);
    p = nullptr;
  }
};
struct HostBuffer {
  void* p = nullptr;
  HostBuffer() = default;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() { reset(); }
  void reset() {
    if (p) cudaFreeHost(p);
    p = nullptr;
  }
};
struct Timing {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  Timing() {
    try {
      cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                 "cudaStreamCreateWithFlags");
      cuda_check(cudaEventCreate(&start), "cudaEventCreate");
      cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
    } catch (...) {
      release();
      throw;
    }
  }
  Timing(const Timing&) = delete;
  Timing& operator=(const Timing&) = delete;
  ~Timing() { release(); }
  void release() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
    start = stop = nullptr;
    stream = nullptr;
  }
  double elapsed_ms() {
    cuda_check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    return ms;
  }
};

std::string read_first_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

// "0-31,64-95" -> the CPUs; empty when the text is not a cpulist.
std::vector<int> parse_cpulist(const std::string& text) {
  std::vector<int> cpus;
  size_t i = 0;
  while (i < text.size()) {
    char* end = nullptr;
    long a = std::strtol(text.c_str() + i, &end, 10);
    if (end == text.c_str() + i || a < 0) return {};
    long b = a;
    i = static_cast<size_t>(end - text.c_str());
    if (i < text.size() && text[i] == '-') {
      b = std::strtol(text.c_str() + i + 1, &end, 10);
      if (end == text.c_str() + i + 1 || b < a || b - a > 4096) return {};
      i = static_cast<size_t>(end - text.c_str());
    }
    for (long c = a; c <= b; ++c) cpus.push_back(static_cast<int>(c));
    if (i < text.size() && text[i] == ',')
      ++i;
    else if (i < text.size() && text[i] != '\n')
      return {};
    else
      break;
  }
  return cpus;
}

struct Gpu {
  int index = 0;
  std::string name, bus_id, sysfs_dir;
  uint64_t memory_bytes = 0;
  // A step failed with a CUDA, cuBLAS or wrong-result error: the GPU's context may be unusable
  // (a sticky error), so its later steps are reported as not run instead of failing again.
  std::string broken_by;
  // Kept from the single-GPU copies for the concurrent ones.
  DeviceBuffer copy_dev;
  HostBuffer copy_host;
};

Json figure_line(const Gpu& g, const char* step, double value, int iters, double ms) {
  return {{"gpu", g.index}, {"step", step}, {"value", value}, {"iters", iters}, {"elapsed_ms", ms}};
}

void report_error(const Gpu& g, const char* step, const StepError& e) {
  say("FIGURE " +
      Json{{"gpu", g.index}, {"step", step}, {"error", e.text}, {"error_kind", e.kind}}.dump());
}

uint16_t to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);  // truncation: any bf16 value will do as test data
}
float from_bf16(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Test matrix: values in [-1, 1) from a fixed LCG, so results are checkable on the host and not
// all zero (zeros would let the GPU save power and clock higher than with real data).
const std::vector<uint16_t>& gemm_input(size_t elements) {
  static std::vector<uint16_t> data;
  if (data.size() != elements) {
    data.resize(elements);
    uint32_t x = 12345;
    for (auto& v : data) {
      x = x * 1664525u + 1013904223u;
      v = to_bf16(static_cast<float>(x >> 8) / static_cast<float>(1u << 23) - 1.0f);
    }
  }
  return data;
}

void gemm_step(Gpu& g, const Options& o) {
  const size_t n = static_cast<size_t>(o.gemm_n);
  const size_t bytes = n * n * sizeof(uint16_t);
  const auto& host = gemm_input(n * n);
  DeviceBuffer a, b, c;
  cuda_check(cudaMalloc(&a.p, bytes), "cudaMalloc(A, " + std::to_string(bytes) + " B)");
  cuda_check(cudaMalloc(&b.p, bytes), "cudaMalloc(B)");
  cuda_check(cudaMalloc(&c.p, bytes), "cudaMalloc(C)");
  cuda_check(cudaMemcpy(a.p, host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy(A)");
  // B holds the same values as A: any data will do for the timing, and the check below reads both.
  cuda_check(cudaMemcpy(b.p, host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy(B)");
  Timing t;
  cublasHandle_t handle = nullptr;
  cublas_check(cublasCreate(&handle), "cublasCreate");
  struct HandleGuard {
    cublasHandle_t h;
    ~HandleGuard() { cublasDestroy(h); }
  } guard{handle};
  cublas_check(cublasSetStream(handle, t.stream), "cublasSetStream");
  const float alpha = 1.0f, beta = 0.0f;
  const int dim = o.gemm_n;
  auto gemm = [&] {
    cublas_check(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, dim, dim, dim, &alpha, a.p,
                              CUDA_R_16BF, dim, b.p, CUDA_R_16BF, dim, &beta, c.p, CUDA_R_16BF, dim,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx(bf16, " + std::to_string(dim) + "^3, CUBLAS_COMPUTE_32F)");
  };
  for (int i = 0; i < o.gemm_warmup; ++i) gemm();
  cuda_check(cudaEventRecord(t.start, t.stream), "cudaEventRecord");
  for (int i = 0; i < o.gemm_iters; ++i) gemm();
  cuda_check(cudaEventRecord(t.stop, t.stream), "cudaEventRecord");
  double ms = t.elapsed_ms();
  // Spot check: eight entries of C (column-major, C(i,j) = sum_k A(i,k) B(k,j)) against the host.
  std::vector<uint16_t> out(n * n);
  cuda_check(cudaMemcpy(out.data(), c.p, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(C)");
  for (int s = 0; s < 8; ++s) {
    size_t i = (static_cast<size_t>(s) * 2654435761u) % n,
           j = (static_cast<size_t>(s) * 40503u + 7) % n;
    double want = 0, scale = 0;
    for (size_t k = 0; k < n; ++k) {
      double p = static_cast<double>(from_bf16(host[i + k * n])) * from_bf16(host[k + j * n]);
      want += p;
      scale += std::fabs(p);
    }
    double got = from_bf16(out[i + j * n]);
    // The result is rounded to bf16 (8 significant bits: half an ulp is 0.4% of it); fp32
    // accumulation of n products errs by at most ~n * 6e-8 of the sum of |products| (5e-4 at
    // n = 8192). 1% of the value plus 1e-3 of that sum passes every correct rounding and fails
    // garbage, which is off by the value's own size (the sum of |products| is ~sqrt(n) times it).
    if (!std::isfinite(got) || std::fabs(got - want) > 0.01 * std::fabs(want) + 1e-3 * scale + 1e-3)
      throw StepError{"wrong_result", "bf16 GEMM result C[" + std::to_string(i) + "," +
                                          std::to_string(j) + "] = " + std::to_string(got) +
                                          ", the host computes " + std::to_string(want)};
  }
  double flops = 2.0 * static_cast<double>(n) * n * n * o.gemm_iters;
  say("FIGURE " +
      figure_line(g, figure::kFigureGemm, flops / (ms / 1e3) / 1e12, o.gemm_iters, ms).dump());
}

void device_copy_step(Gpu& g, const Options& o) {
  DeviceBuffer src, dst;
  cuda_check(cudaMalloc(&src.p, o.device_copy_bytes),
             "cudaMalloc(" + std::to_string(o.device_copy_bytes) + " B)");
  cuda_check(cudaMalloc(&dst.p, o.device_copy_bytes),
             "cudaMalloc(" + std::to_string(o.device_copy_bytes) + " B)");
  cuda_check(cudaMemset(src.p, 0x5a, o.device_copy_bytes), "cudaMemset");
  Timing t;
  auto copy = [&] {
    cuda_check(
        cudaMemcpyAsync(dst.p, src.p, o.device_copy_bytes, cudaMemcpyDeviceToDevice, t.stream),
        "cudaMemcpyAsync(device to device)");
  };
  for (int i = 0; i < o.device_copy_warmup; ++i) copy();
  cuda_check(cudaEventRecord(t.start, t.stream), "cudaEventRecord");
  for (int i = 0; i < o.device_copy_iters; ++i) copy();
  cuda_check(cudaEventRecord(t.stop, t.stream), "cudaEventRecord");
  double ms = t.elapsed_ms();
  // Every byte is read once and written once: both cross the memory bus.
  double bytes = 2.0 * static_cast<double>(o.device_copy_bytes) * o.device_copy_iters;
  say("FIGURE " +
      figure_line(g, figure::kFigureDeviceCopy, bytes / (ms / 1e3) / 1e9, o.device_copy_iters, ms)
          .dump());
}

// Pinned memory near the GPU: allocated while this thread runs on the GPU's local CPUs, so the
// kernel places the pages on its NUMA node (a far socket's memory would slow the copies down).
void alloc_pinned_near(Gpu& g, const Options& o) {
  std::vector<int> cpus = parse_cpulist(read_first_line(g.sysfs_dir + "/local_cpulist"));
  cpu_set_t saved;
  bool pinned = false;
  if (!cpus.empty() && sched_getaffinity(0, sizeof saved, &saved) == 0) {
    cpu_set_t near;
    CPU_ZERO(&near);
    for (int c : cpus)
      if (c < CPU_SETSIZE) CPU_SET(c, &near);
    pinned = sched_setaffinity(0, sizeof near, &near) == 0;
  }
  cudaError_t e = cudaHostAlloc(&g.copy_host.p, o.host_copy_bytes, cudaHostAllocPortable);
  if (e == cudaSuccess) std::memset(g.copy_host.p, 0x3c, o.host_copy_bytes);
  if (pinned) sched_setaffinity(0, sizeof saved, &saved);
  cuda_check(e, "cudaHostAlloc(" + std::to_string(o.host_copy_bytes) + " B, pinned)");
}

void host_copy_step(Gpu& g, const Options& o, bool to_device) {
  if (!g.copy_host.p) alloc_pinned_near(g, o);
  if (!g.copy_dev.p)
    cuda_check(cudaMalloc(&g.copy_dev.p, o.host_copy_bytes),
               "cudaMalloc(" + std::to_string(o.host_copy_bytes) + " B)");
  Timing t;
  const char* what =
      to_device ? "cudaMemcpyAsync(host to device)" : "cudaMemcpyAsync(device to host)";
  auto copy = [&] {
    cuda_check(to_device ? cudaMemcpyAsync(g.copy_dev.p, g.copy_host.p, o.host_copy_bytes,
                                           cudaMemcpyHostToDevice, t.stream)
                         : cudaMemcpyAsync(g.copy_host.p, g.copy_dev.p, o.host_copy_bytes,
                                           cudaMemcpyDeviceToHost, t.stream),
               what);
  };
  for (int i = 0; i < o.host_copy_warmup; ++i) copy();
  cuda_check(cudaEventRecord(t.start, t.stream), "cudaEventRecord");
  for (int i = 0; i < o.host_copy_iters; ++i) copy();
  cuda_check(cudaEventRecord(t.stop, t.stream), "cudaEventRecord");
  // The link as trained under load: once the timed copies have begun, read sysfs.
  Json link;
  if (to_device) {
    while (cudaEventQuery(t.start) == cudaErrorNotReady)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    link = {{"speed", read_first_line(g.sysfs_dir + "/current_link_speed")},
            {"width", read_first_line(g.sysfs_dir + "/current_link_width")}};
  }
  double ms = t.elapsed_ms();
  double bytes = static_cast<double>(o.host_copy_bytes) * o.host_copy_iters;
  Json line = figure_line(g, to_device ? figure::kFigureH2d : figure::kFigureD2h,
                          bytes / (ms / 1e3) / 1e9, o.host_copy_iters, ms);
  if (to_device) line["link"] = link;
  say("FIGURE " + line.dump());
}

// Every GPU copies at once; each figure is that GPU's own bytes over its own events.
void concurrent_step(std::vector<Gpu>& gpus, const Options& o, bool to_device) {
  const char* step = to_device ? figure::kFigureH2dConcurrent : figure::kFigureD2hConcurrent;
  say("STEP " + Json{{"gpu", -1}, {"step", step}}.dump());
  struct Run {
    Gpu* g;
    std::unique_ptr<Timing> t;
    std::string error, error_kind;
  };
  std::vector<Run> runs;
  for (auto& g : gpus) {
    Run r{&g, nullptr, "", ""};
    try {
      if (!g.copy_host.p || !g.copy_dev.p)
        throw StepError{"not_run",
                        "its single-GPU copies did not run (" +
                            (g.broken_by.empty() ? std::string("they failed") : g.broken_by) + ")"};
      cuda_check(cudaSetDevice(g.index), "cudaSetDevice");
      r.t = std::make_unique<Timing>();
    } catch (const StepError& e) {
      r.error = e.text;
      r.error_kind = e.kind;
    }
    runs.push_back(std::move(r));
  }
  auto enqueue = [&](Run& r, int iters, bool timed) {
    Gpu& g = *r.g;
    cuda_check(cudaSetDevice(g.index), "cudaSetDevice");
    if (timed) cuda_check(cudaEventRecord(r.t->start, r.t->stream), "cudaEventRecord");
    for (int i = 0; i < iters; ++i)
      cuda_check(to_device ? cudaMemcpyAsync(g.copy_dev.p, g.copy_host.p, o.host_copy_bytes,
                                             cudaMemcpyHostToDevice, r.t->stream)
                           : cudaMemcpyAsync(g.copy_host.p, g.copy_dev.p, o.host_copy_bytes,
                                             cudaMemcpyDeviceToHost, r.t->stream),
                 "cudaMemcpyAsync");
    if (timed) cuda_check(cudaEventRecord(r.t->stop, r.t->stream), "cudaEventRecord");
  };
  for (int pass = 0; pass < 2; ++pass) {  // warm-up together, then the timed copies together
    for (auto& r : runs) {
      if (!r.error.empty()) continue;
      try {
        enqueue(r, pass == 0 ? o.host_copy_warmup : o.host_copy_iters, pass == 1);
      } catch (const StepError& e) {
        r.error = e.text;
        r.error_kind = e.kind;
      }
    }
    for (auto& r : runs) {
      if (!r.error.empty()) continue;
      try {
        cuda_check(cudaSetDevice(r.g->index), "cudaSetDevice");
        cuda_check(cudaStreamSynchronize(r.t->stream), "cudaStreamSynchronize");
      } catch (const StepError& e) {
        r.error = e.text;
        r.error_kind = e.kind;
      }
    }
  }
  for (auto& r : runs) {
    if (r.error.empty()) {
      try {
        cuda_check(cudaSetDevice(r.g->index), "cudaSetDevice");
        double ms = r.t->elapsed_ms();
        double bytes = static_cast<double>(o.host_copy_bytes) * o.host_copy_iters;
        say("FIGURE " +
            figure_line(*r.g, step, bytes / (ms / 1e3) / 1e9, o.host_copy_iters, ms).dump());
        continue;
      } catch (const StepError& e) {
        r.error = e.text;
        r.error_kind = e.kind;
      }
    }
    report_error(*r.g, step, {r.error_kind, r.error});
  }
}

template <typename F>
void run_step(Gpu& g, const char* step, F&& body) {
  say("STEP " + Json{{"gpu", g.index}, {"step", step}}.dump());
  if (!g.broken_by.empty()) {
    report_error(g, step, {"not_run", "not run: " + g.broken_by});
    return;
  }
  try {
    cuda_check(cudaSetDevice(g.index), "cudaSetDevice(" + std::to_string(g.index) + ")");
    body();
  } catch (const StepError& e) {
    report_error(g, step, e);
    if (e.kind != "out_of_memory") g.broken_by = std::string(step) + " failed on this GPU";
  }
}

int run(const Options& o) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    say(std::string("UNAVAILABLE no CUDA device/driver: cudaGetDeviceCount: ") +
        (e != cudaSuccess ? std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e)
                          : "0 devices"));
    return 0;
  }
  std::vector<int> which = o.devices;
  if (which.empty())
    for (int i = 0; i < count; ++i) which.push_back(i);
  std::vector<Gpu> gpus(which.size());
  Json devices = Json::array();
  for (size_t k = 0; k < which.size(); ++k) {
    int i = which[k];
    if (i < 0 || i >= count) {
      say("FAILED bad_device --devices names CUDA device " + std::to_string(i) + ", " +
          std::to_string(count) + " visible");
      return 1;
    }
    cudaDeviceProp prop{};
    cudaError_t pe = cudaGetDeviceProperties(&prop, i);
    char bus[32] = {};
    cudaError_t be = cudaDeviceGetPCIBusId(bus, sizeof bus, i);
    if (pe != cudaSuccess || be != cudaSuccess) {
      cudaError_t bad = pe != cudaSuccess ? pe : be;
      say(std::string("FAILED cuda_error device ") + std::to_string(i) + ": " +
          (pe != cudaSuccess ? "cudaGetDeviceProperties" : "cudaDeviceGetPCIBusId") + ": " +
          cudaGetErrorName(bad) + ": " + cudaGetErrorString(bad));
      return 1;
    }
    Gpu& g = gpus[k];
    g.index = i;
    g.name = prop.name;
    g.bus_id = fabkit::topo::normalize_bus_id(bus).value_or(bus);
    g.memory_bytes = prop.totalGlobalMem;
    g.sysfs_dir = o.sysfs + "/bus/pci/devices/" + g.bus_id;
    devices.push_back(
        {{"index", i}, {"name", g.name}, {"bus_id", g.bus_id}, {"memory_bytes", g.memory_bytes}});
  }
  int runtime = 0, driver = 0, major = 0, minor = 0, patch = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  Json hello = {{"protocol", fabkit::fabric::kBenchProtocolVersion},
                {"cuda_runtime", runtime},
                {"cuda_driver", driver},
                {"devices", devices}};
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
    hello["cublas"] = major * 10000 + minor * 100 + patch;
  say("HELLO " + hello.dump());

  for (auto& g : gpus) {
    run_step(g, figure::kFigureGemm, [&] { gemm_step(g, o); });
    run_step(g, figure::kFigureDeviceCopy, [&] { device_copy_step(g, o); });
    run_step(g, figure::kFigureH2d, [&] { host_copy_step(g, o, true); });
    run_step(g, figure::kFigureD2h, [&] { host_copy_step(g, o, false); });
  }
  if (!o.skip_concurrent && gpus.size() > 1) {
    concurrent_step(gpus, o, true);
    concurrent_step(gpus, o, false);
  }
  for (auto& g : gpus) {
    cudaSetDevice(g.index);
    g.copy_dev.reset();
    g.copy_host.reset();
  }
  say("DONE");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fabcheck-gpu-bench: GEMM, memory and PCIe copy figures per GPU for fabcheck node --active "
      "(protocol on fd 3)"};
  Options o;
  app.add_option("--devices", o.devices,
                 "CUDA device indexes, comma-separated (default: every visible one)")
      ->delimiter(',');
  app.add_option("--gemm-n", o.gemm_n, "m = n = k of the bf16 GEMM")->check(CLI::Range(64, 65536));
  app.add_option("--gemm-warmup", o.gemm_warmup)->check(CLI::Range(0, 10000));
  app.add_option("--gemm-iters", o.gemm_iters)->check(CLI::Range(1, 100000));
  app.add_option("--device-copy-bytes", o.device_copy_bytes)
      ->check(CLI::Range(uint64_t{4096}, uint64_t{1} << 40));
  app.add_option("--device-copy-warmup", o.device_copy_warmup)->check(CLI::Range(0, 10000));
  app.add_option("--device-copy-iters", o.device_copy_iters)->check(CLI::Range(1, 100000));
  app.add_option("--host-copy-bytes", o.host_copy_bytes)
      ->check(CLI::Range(uint64_t{4096}, uint64_t{1} << 40));
  app.add_option("--host-copy-warmup", o.host_copy_warmup)->check(CLI::Range(0, 10000));
  app.add_option("--host-copy-iters", o.host_copy_iters)->check(CLI::Range(1, 100000));
  app.add_option("--sysfs", o.sysfs,
                 "where sysfs is (the PCIe link is read under DIR/bus/pci/devices)");
  app.add_flag("--skip-concurrent", o.skip_concurrent, "only the single-GPU steps");
  CLI11_PARSE(app, argc, argv);
  g_ctl = fdopen(3, "w");
  if (g_ctl == nullptr) {
    std::cerr << "fabcheck-gpu-bench: fd 3 is not open; this program is started by fabcheck node "
                 "--active "
                 "(or bench/gpu_active/run_compare.py)\n";
    return 2;
  }
  return run(o);
}
