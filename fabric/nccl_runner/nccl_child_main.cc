// fabcheck-nccl-runner: one NCCL rank in its own process, driven by run_nccl_allreduce over the
// protocol in child_protocol.h (fd 3 out, stdin in). Its stdout/stderr carry NCCL's INFO log,
// which the parent parses. Links libnccl and cudart; the main fabcheck never does.
//
// Every wait is bounded: the communicator is created non-blocking and each collective's completion
// is polled (cudaEventQuery + ncclCommGetAsyncError) against --timeout-ms, then ncclCommAbort, so
// a dead peer ends in "FAILED peer_timeout", never a hang.
#include <cuda_runtime.h>
#include <nccl.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "common/json.h"
#include "fabric/allreduce/allreduce_types.h"
#include "fabric/allreduce/sweep.h"
#include "fabric/nccl_runner/child_protocol.h"

namespace {

using namespace fabkit::fabric;
using Clock = std::chrono::steady_clock;

FILE* g_ctl = nullptr;

void say(const std::string& line) {
  std::fprintf(g_ctl, "%s\n", line.c_str());
  std::fflush(g_ctl);
}

struct Failure {
  std::string kind, text;
};

void cuda_check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw Failure{"cuda_error", std::string(call) + ": " + cudaGetErrorString(e)};
}

// Waits for the communicator to leave ncclInProgress (init) or for `event` (a collective),
// bounded by timeout_ms; aborts the communicator on timeout or an async error.
void wait_comm(ncclComm_t comm, cudaEvent_t event, int timeout_ms, const std::string& what) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm, &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      ncclCommAbort(comm);
      throw Failure{"nccl_error", what + ": " + ncclGetErrorString(async)};
    }
    if (event == nullptr && async == ncclSuccess) return;
    if (event != nullptr) {
      cudaError_t q = cudaEventQuery(event);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) throw Failure{"cuda_error", what + ": " + cudaGetErrorString(q)};
    }
    if (Clock::now() > deadline) {
      ncclCommAbort(comm);
      throw Failure{"peer_timeout", what + " did not complete within " + std::to_string(timeout_ms) + " ms (peer gone or network stalled)"};
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

int run(int rank, int world, const std::vector<uint64_t>& sizes_in, int iters, int warmup, int timeout_ms, int device) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    say(std::string("UNAVAILABLE no CUDA device/driver: cudaGetDeviceCount: ") +
        (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices"));
    return 0;
  }
  if (device >= count) {
    say("UNAVAILABLE CUDA device " + std::to_string(device) + " requested, " + std::to_string(count) + " present");
    return 0;
  }
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  ncclUniqueId id{};
  if (rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) throw Failure{"nccl_error", std::string("ncclGetUniqueId: ") + ncclGetErrorString(r)};
    say("READY " + hex_encode(&id, sizeof id));
  } else {
    say("READY -");
  }
  std::string line;
  if (!std::getline(std::cin, line)) return 0;  // parent gone
  ChildLine go = parse_child_line(line);
  if (go.kind == ChildLineKind::kStop) return 0;
  if (go.kind != ChildLineKind::kGo) throw Failure{"child_protocol", "expected GO or STOP, got: " + go.text};
  std::vector<uint8_t> bytes;
  hex_decode(go.word, &bytes);
  std::memcpy(&id, bytes.data(), sizeof id);

  ncclComm_t comm = nullptr;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t r = ncclCommInitRankConfig(&comm, world, id, rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) throw Failure{"nccl_error", std::string("ncclCommInitRankConfig: ") + ncclGetErrorString(r)};
  wait_comm(comm, nullptr, timeout_ms, "ncclCommInitRank");

  std::vector<uint64_t> sizes = sizes_in;
  uint64_t max_count = 0;
  for (auto& b : sizes) max_count = std::max<uint64_t>(max_count, b / sizeof(float));
  float *d_in = nullptr, *d_out = nullptr;
  cuda_check(cudaMalloc(&d_in, max_count * sizeof(float)), "cudaMalloc");
  cuda_check(cudaMalloc(&d_out, max_count * sizeof(float)), "cudaMalloc");
  cudaStream_t stream;
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaEvent_t start, stop;
  cuda_check(cudaEventCreate(&start), "cudaEventCreate");
  cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<float> host(max_count);
  fabkit::Json result;
  result["sizes"] = fabkit::Json::array();
  for (size_t si = 0; si < sizes.size(); ++si) {
    uint64_t n = sizes[si] / sizeof(float);
    fill_input(host.data(), n, rank, si);
    cuda_check(cudaMemcpy(d_in, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
    cuda_check(cudaMemset(d_out, 0xff, n * sizeof(float)), "cudaMemset");  // NaN pattern: unwritten fails
    std::string what = "ncclAllReduce of " + std::to_string(n * sizeof(float)) + " B";
    for (int i = 0; i < warmup; ++i) {
      ncclAllReduce(d_in, d_out, n, ncclFloat, ncclSum, comm, stream);
      cuda_check(cudaEventRecord(stop, stream), "cudaEventRecord");
      wait_comm(comm, stop, timeout_ms, what + " (warmup)");
    }
    cuda_check(cudaEventRecord(start, stream), "cudaEventRecord");
    for (int i = 0; i < iters; ++i) {
      ncclResult_t ar = ncclAllReduce(d_in, d_out, n, ncclFloat, ncclSum, comm, stream);
      if (ar != ncclSuccess && ar != ncclInProgress) throw Failure{"nccl_error", what + ": " + ncclGetErrorString(ar)};
    }
    cuda_check(cudaEventRecord(stop, stream), "cudaEventRecord");
    wait_comm(comm, stop, timeout_ms, what);
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    cuda_check(cudaMemcpy(host.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    SizeResult s;
    s.bytes = n * sizeof(float);
    s.time_us = ms * 1000.0 / iters;
    s.algbw_gbps = algbw_gbps(s.bytes, s.time_us);
    s.busbw_gbps = allreduce_busbw_gbps(s.algbw_gbps, world);
    s.correct = first_mismatch(host.data(), n, world, si) < 0;
    result["sizes"].push_back(to_json(s));
    say("PROGRESS " + std::to_string(s.bytes));
  }
  ncclCommDestroy(comm);
  cudaFree(d_in);
  cudaFree(d_out);
  say("RESULT " + result.dump());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fabcheck-nccl-runner: one NCCL all-reduce rank, driven by fabcheck (protocol on fd 3)"};
  int rank = 0, world = 2, iters = 20, warmup = 5, timeout_ms = 30000, device = -1;
  std::vector<uint64_t> sizes;
  app.add_option("--rank", rank)->required();
  app.add_option("--world-size", world);
  app.add_option("--sizes", sizes)->delimiter(',')->required();
  app.add_option("--iters", iters);
  app.add_option("--warmup", warmup);
  app.add_option("--timeout-ms", timeout_ms);
  app.add_option("--device", device, "CUDA device (default: $LOCAL_RANK, else 0)");
  CLI11_PARSE(app, argc, argv);
  g_ctl = fdopen(3, "w");
  if (g_ctl == nullptr) {
    std::cerr << "fabcheck-nccl-runner: fd 3 is not open; this program is started by fabcheck (run_nccl_allreduce)\n";
    return 2;
  }
  if (device < 0) {
    const char* lr = std::getenv("LOCAL_RANK");
    device = lr ? std::atoi(lr) : 0;
  }
  try {
    return run(rank, world, sizes, iters, warmup, timeout_ms, device);
  } catch (const Failure& f) {
    say("FAILED " + f.kind + " " + f.text);
    return 1;
  }
}
