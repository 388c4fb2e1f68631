// fabcheck-nccl-runner: one NCCL rank in its own process, driven over the protocol in
// child_protocol.h (fd 3 out, stdin in). Its stdout/stderr carry NCCL's INFO log, which the parent
// parses. Links libnccl and cudart; the main fabcheck never does.
//
// Every NCCL and CUDA return is checked (nccl_calls.h): ncclInProgress is waited out before the
// next call, each wait has a deadline, and an error or timeout aborts the communicator and ends in
// "FAILED <kind> <call>: <NCCL error> [NCCL: <ncclGetLastError>]", never a hang.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "common/json.h"
#include "fabric/allreduce/allreduce_types.h"
#include "fabric/allreduce/sweep.h"
#include "fabric/nccl_runner/child_protocol.h"
#include "fabric/nccl_runner/nccl_calls.h"

namespace {

using fabkit::hex_decode;
using fabkit::hex_encode;
using namespace fabkit::fabric;
using namespace fabkit::fabric::nccl_child;

FILE* g_ctl = nullptr;

void say(const std::string& line) {
  std::fprintf(g_ctl, "%s\n", line.c_str());
  std::fflush(g_ctl);
}

struct Options {
  int rank = 0, world = 2, iters = 20, warmup = 5, timeout_ms = 30000;
  int device = -1;            // explicit CUDA device index
  std::string device_bus_id;  // the GPU nearest the NIC under test (fabcheck's locality pick)
  std::vector<uint64_t> sizes;
};

struct DevicePick {
  int index = -1;
  std::string chosen_by;  // "flag", "locality", "local_rank", "default"
  std::string reason;
};

// --device, else the locality pick (resolved by CUDA, which honours CUDA_VISIBLE_DEVICES and its
// own device order), else LOCAL_RANK, else 0. Each fallback says why.
DevicePick pick_device(const Options& o, int count) {
  DevicePick p;
  if (o.device >= 0) return {o.device, "flag", "--device " + std::to_string(o.device)};
  std::string why;
  if (!o.device_bus_id.empty()) {
    int idx = -1;
    cudaError_t e = cudaDeviceGetByPCIBusId(&idx, o.device_bus_id.c_str());
    if (e == cudaSuccess) return {idx, "locality", "the GPU nearest the NIC under test, " + o.device_bus_id};
    why = "the locality pick " + o.device_bus_id + " is not a visible CUDA device (" +
          cudaGetErrorName(e) + "; CUDA_VISIBLE_DEVICES?); ";
  } else {
    why = "no locality pick was passed; ";
  }
  if (const char* lr = std::getenv("LOCAL_RANK")) {
    char* end = nullptr;
    long v = std::strtol(lr, &end, 10);
    if (end != lr && *end == '\0' && v >= 0) return {static_cast<int>(v % count), "local_rank", why + "LOCAL_RANK=" + lr};
    why += "LOCAL_RANK='" + std::string(lr) + "' is not a number; ";
  }
  return {0, "default", why + "device 0"};
}

int run(const Options& o) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    say(std::string("UNAVAILABLE no CUDA device/driver: cudaGetDeviceCount: ") +
        (e != cudaSuccess ? std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e) : "0 devices"));
    return 0;
  }
  DevicePick dev = pick_device(o, count);
  if (dev.index >= count) {
    say("UNAVAILABLE CUDA device " + std::to_string(dev.index) + " requested (" + dev.reason + "), " +
        std::to_string(count) + " present");
    return 0;
  }
  cuda_check(cudaSetDevice(dev.index), "cudaSetDevice(" + std::to_string(dev.index) + ")");
  char bus[32] = {};
  cuda_check(cudaDeviceGetPCIBusId(bus, sizeof bus, dev.index), "cudaDeviceGetPCIBusId");
  std::fprintf(stderr, "fabcheck-nccl-runner: rank %d on CUDA device %d (%s), chosen by %s: %s\n", o.rank,
               dev.index, bus, dev.chosen_by.c_str(), dev.reason.c_str());

  // 1. Unique id (rank 0) and readiness; the parent answers GO with rank 0's id, or STOP.
  ncclUniqueId id{};
  if (o.rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) throw Failure{"nccl_error", "ncclGetUniqueId: " + nccl_error_text(nullptr, r)};
    say("READY " + hex_encode(&id, sizeof id));
  } else {
    say("READY -");
  }
  std::string line;
  if (!std::getline(std::cin, line)) return 0;  // parent gone
  ChildLine go = parse_child_line(line);
  if (go.kind == ChildLineKind::kStop) return 0;
  std::vector<uint8_t> bytes;
  if (go.kind != ChildLineKind::kGo || !hex_decode(go.word, &bytes) || bytes.size() != sizeof id)
    throw Failure{"child_protocol", "expected GO <id> or STOP, got: " + line.substr(0, 60)};
  std::memcpy(&id, bytes.data(), sizeof id);

  // 2. Communicator, buffers, stream, events. The buffers are declared first so that on an error
  // path the communicator is aborted (stopping kernels still waiting for a peer) before cudaFree,
  // which would otherwise wait for those kernels forever.
  struct Device {
    float* in = nullptr;
    float* out = nullptr;
    cudaStream_t stream = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    ~Device() {
      if (start) cudaEventDestroy(start);
      if (stop) cudaEventDestroy(stop);
      if (stream) cudaStreamDestroy(stream);
      if (in) cudaFree(in);
      if (out) cudaFree(out);
    }
  } d;
  Comm comm;
  comm.init(o.world, id, o.rank, deadline_in(o.timeout_ms));
  uint64_t max_count = 0;
  for (uint64_t b : o.sizes) max_count = std::max<uint64_t>(max_count, b / sizeof(float));
  cuda_check(cudaMalloc(&d.in, max_count * sizeof(float)), "cudaMalloc(input)");
  cuda_check(cudaMalloc(&d.out, max_count * sizeof(float)), "cudaMalloc(output)");
  cuda_check(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  cuda_check(cudaEventCreate(&d.start), "cudaEventCreate");
  cuda_check(cudaEventCreate(&d.stop), "cudaEventCreate");

  // 3. The sweep: warm-up (the first call also connects), then the timed iterations, each call
  // settled before the next; the deadline restarts per size (PROGRESS tells the parent likewise).
  std::vector<float> host(max_count);
  fabkit::Json result;
  result["sizes"] = fabkit::Json::array();
  for (size_t si = 0; si < o.sizes.size(); ++si) {
    uint64_t n = o.sizes[si] / sizeof(float);
    auto deadline = deadline_in(o.timeout_ms);
    fill_input(host.data(), n, o.rank, si);
    cuda_check(cudaMemcpy(d.in, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
    cuda_check(cudaMemset(d.out, 0xff, n * sizeof(float)), "cudaMemset");  // NaNs: unwritten fails
    std::string what = "ncclAllReduce of " + std::to_string(n * sizeof(float)) + " B";
    for (int i = 0; i < o.warmup; ++i) {
      comm.settle(ncclAllReduce(d.in, d.out, n, ncclFloat, ncclSum, comm.get(), d.stream), what + " (warmup)", deadline);
      cuda_check(cudaEventRecord(d.stop, d.stream), "cudaEventRecord");
      comm.wait_event(d.stop, what + " (warmup)", deadline);
    }
    cuda_check(cudaEventRecord(d.start, d.stream), "cudaEventRecord");
    for (int i = 0; i < o.iters; ++i)
      comm.settle(ncclAllReduce(d.in, d.out, n, ncclFloat, ncclSum, comm.get(), d.stream), what, deadline);
    cuda_check(cudaEventRecord(d.stop, d.stream), "cudaEventRecord");
    comm.wait_event(d.stop, what, deadline);
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, d.start, d.stop), "cudaEventElapsedTime");
    cuda_check(cudaMemcpy(host.data(), d.out, n * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    SizeResult s;
    s.bytes = n * sizeof(float);
    s.time_us = ms * 1000.0 / o.iters;
    s.algbw_gbps = algbw_gbps(s.bytes, s.time_us);
    s.busbw_gbps = allreduce_busbw_gbps(s.algbw_gbps, o.world);
    s.correct = first_mismatch(host.data(), n, o.world, si) < 0;
    result["sizes"].push_back(to_json(s));
    say("PROGRESS " + std::to_string(s.bytes));
  }
  comm.finalize(deadline_in(o.timeout_ms));

  int version = 0;
  ncclGetVersion(&version);
  result["nccl_version"] = version;
  result["device"] = {{"index", dev.index}, {"bus_id", bus}, {"chosen_by", dev.chosen_by}, {"reason", dev.reason}};
  say("RESULT " + result.dump());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fabcheck-nccl-runner: one NCCL all-reduce rank, driven by fabcheck (protocol on fd 3)"};
  Options o;
  app.add_option("--rank", o.rank)->required()->check(CLI::NonNegativeNumber);
  app.add_option("--world-size", o.world)->check(CLI::PositiveNumber);
  app.add_option("--sizes", o.sizes, "bytes per all-reduce, comma-separated")->delimiter(',')->required();
  app.add_option("--iters", o.iters)->check(CLI::PositiveNumber);
  app.add_option("--warmup", o.warmup)->check(CLI::NonNegativeNumber);
  app.add_option("--timeout-ms", o.timeout_ms)->check(CLI::PositiveNumber);
  app.add_option("--device", o.device, "CUDA device index (overrides the locality pick)");
  app.add_option("--device-bus-id", o.device_bus_id, "PCI bus id of the GPU to use (fabcheck's pick: nearest the NIC)");
  CLI11_PARSE(app, argc, argv);
  if (o.rank >= o.world) {
    std::cerr << "fabcheck-nccl-runner: --rank " << o.rank << " is not below --world-size " << o.world << "\n";
    return 2;
  }
  for (uint64_t b : o.sizes)
    if (b < sizeof(float)) {
      std::cerr << "fabcheck-nccl-runner: --sizes entry " << b << " is below one float (4 bytes)\n";
      return 2;
    }
  g_ctl = fdopen(3, "w");
  if (g_ctl == nullptr) {
    std::cerr << "fabcheck-nccl-runner: fd 3 is not open; this program is started by fabcheck (run_nccl_allreduce) "
                 "or bench/nccl/nccl_child_driver.py\n";
    return 2;
  }
  try {
    return run(o);
  } catch (const Failure& f) {
    say("FAILED " + f.kind + " " + f.text);
    return 1;
  }
}
