// `fabcheck node --active`: the active GPU check, after the node probe's passive ones. Gathers
// (fabcheck-gpu-bench in a child process, the intra-node NCCL all-reduce through
// fabcheck-nccl-runner children, the GPUs' PCIe link capabilities from sysfs), judges against
// the expected-performance model (probes/gpu_active) and adds the `gpu_active` section and its
// findings to the node report. Bounded by the settings' budget; without a GPU, driver or the
// GPU binaries it says unavailable (an info finding, exit 0).
#pragma once

#include <string>

#include "common/environment.h"
#include "common/json.h"
#include "common/progress.h"
#include "common/report.h"
#include "common/roots.h"
#include "probes/gpu_active/gpu_active_facts.h"

namespace fabkit::fabric {

struct GpuActiveOptions {
  probes::GpuActiveSettings settings;
  std::string bench_path;   // "" = find_gpu_bench()
  std::string runner_path;  // "" = find_nccl_runner's search
  // No line from the bench child for this long during a step: a hung GPU, killed. Healthy steps
  // take well under a second each (docs/gpu-node.md).
  int silence_timeout_ms = 60000;
};

// gpus_section: the node report's `gpus` (NVML) section, or null: with NVML listing no GPU the
// check is unavailable without starting anything (its reason is NVML's).
probes::GpuActiveFacts gather_gpu_active(const GpuActiveOptions& options, const SystemRoots& roots,
                                         const Environment& env, const Json& gpus_section,
                                         ProgressSink* progress);

// The node report's GPU facts: gather_gpu_active on r's `gpus` section, then the findings and the
// `gpu_active` section appended to r.
void append_gpu_active(Report& r, const GpuActiveOptions& options, const SystemRoots& roots,
                       const Environment& env, ProgressSink* progress);

}  // namespace fabkit::fabric
