// The parent's end of fabcheck-gpu-bench (bench_protocol.h): starts the child, reads its lines
// with two deadlines — the check's budget, and a silence timeout that catches a GPU hung inside a
// step — records what it measured, and kills it (SIGKILL, reaped) on every way out, so a hung GPU
// never hangs fabcheck. A broken child (malformed, oversized or truncated lines, an early exit)
// ends the run with a named error; the figures it sent before stay.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "fabric/wire/socket_io.h"
#include "probes/gpu_active/gpu_active_facts.h"

namespace fabkit::fabric {

struct BenchRun {
  std::string program;             // fabcheck-gpu-bench (or a test's fake child)
  std::vector<std::string> args;   // bench_args()
  std::vector<std::string> env;    // KEY=VALUE
  wire::Deadline deadline;         // the budget: killed when it passes (error "budget")
  int silence_timeout_ms = 60000;  // killed after this long without a line (error "timeout")
  std::function<void(const std::string& label)> on_step;  // each STEP, for the progress line
};

// Fills facts->gpus (HELLO), their figures (FIGURE), bench_path/bench_exit and, when the run did
// not reach DONE, status ("unavailable" or "incomplete"), error, reason and stopped_at. status
// is "ran" after DONE. Never throws for anything the child does.
void run_gpu_bench(const BenchRun& run, probes::GpuActiveFacts* facts);

// The child's arguments for these settings; sysfs_root is where it reads the PCIe link.
std::vector<std::string> bench_args(const probes::GpuActiveSettings& s,
                                    const std::string& sysfs_root);

// $FABKIT_GPU_BENCH, fabcheck-gpu-bench beside this executable, then the installed libexec/fabkit
// (common/helper_program.h); "" when none exists (fabcheck was built without CUDA and cuBLAS) or
// none passes the trust rule (each refused one in *refused).
std::string find_gpu_bench(std::vector<std::string>* refused = nullptr);

}  // namespace fabkit::fabric
