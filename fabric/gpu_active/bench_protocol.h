// The line protocol between fabcheck (bench_runner.h) and its fabcheck-gpu-bench child. The
// child writes one line per event on fd 3 (its stdout and stderr are a log); nothing goes back:
//   HELLO <json>    {"protocol":1,"cuda_runtime":13000,"cuda_driver":13000,"cublas":130100,
//                    "devices":[{"index":0,"name":"NVIDIA H100 80GB HBM3",
//                                "bus_id":"0000:18:00.0","memory_bytes":85045231616}]}
//   STEP <json>     {"gpu":0,"step":"gemm_bf16"}  a step starts (gpu -1: every GPU at once)
//   FIGURE <json>   {"gpu":0,"step":"h2d","value":53.1,"iters":10,"elapsed_ms":50.5,
//                    "link":{"speed":"32.0 GT/s PCIe","width":"16"}}   a step's result, or
//                   {"gpu":0,"step":"gemm_bf16","error":"...","error_kind":"cuda_error"}
//   DONE            every step ran
//   UNAVAILABLE <reason>      no CUDA device or driver: the check cannot run here (exit 0)
//   FAILED <kind> <reason>    the child could not go on (exit 1)
// Steps are the figure names of probes/gpu_active/gpu_active_facts.h. Pure parsing, so a broken
// child's lines (malformed, wrong types, unknown step) are tested without CUDA.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fabkit::fabric {

enum class BenchLineKind { kHello, kStep, kFigure, kDone, kUnavailable, kFailed, kInvalid };

struct BenchDevice {
  int index = 0;
  std::string name;
  std::string bus_id;
  std::optional<uint64_t> memory_bytes;
};

struct BenchLine {
  BenchLineKind kind = BenchLineKind::kInvalid;
  // HELLO
  int protocol = 0;
  std::optional<int> cuda_runtime, cuda_driver, cublas;
  std::vector<BenchDevice> devices;
  // STEP, FIGURE
  int gpu = -1;
  std::string step;
  // FIGURE
  std::optional<double> value;
  int iters = 0;
  double elapsed_ms = 0;
  std::string error;       // the step failed: what, naming the CUDA/cuBLAS call
  std::string error_kind;  // "cuda_error", "cublas_error", "out_of_memory", "wrong_result"
  std::string link_speed, link_width;  // sysfs text read during the copy ("" = not read)
  // UNAVAILABLE / FAILED: text; FAILED: word = the kind; kInvalid: text = what is wrong
  std::string word, text;
};

inline constexpr int kBenchProtocolVersion = 1;
// A HELLO for 64 GPUs is ~8 KB; anything longer is a broken child.
inline constexpr size_t kMaxBenchLineBytes = 64 * 1024;

BenchLine parse_bench_line(const std::string& line);
bool is_bench_step(const std::string& step);

}  // namespace fabkit::fabric
