#include "fabric/gpu_active/gpu_active_check.h"

#include <algorithm>
#include <chrono>

#include "common/helper_program.h"
#include "fabric/gpu_active/bench_runner.h"
#include "fabric/gpu_active/sysfs_link.h"
#include "fabric/nccl_runner/local_allreduce.h"

namespace fabkit::fabric {
namespace {

using Clock = std::chrono::steady_clock;

// Below this much budget an all-reduce run (8 processes, CUDA and NCCL initialisation) is not
// started: it would only be killed.
constexpr int kMinAllreduceMs = 5000;
// The bench child's share of the budget when an all-reduce follows (the rest is the all-reduce's,
// plus whatever the bench did not use).
constexpr double kBenchBudgetShare = 0.6;

int ms_until(Clock::time_point t) {
  return static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count());
}

// What NVML (the node probe's gpus section) says about GPUs here: count, or why there are none.
int nvml_gpu_count(const Json& gpus, std::string* why_none) {
  if (!gpus.is_object()) return -1;  // not known: let the bench child find out
  int count =
      gpus.contains("count") && gpus["count"].is_number_integer() ? gpus["count"].get<int>() : -1;
  if (count == 0) {
    if (gpus.contains("nvml_error") && gpus["nvml_error"].is_string())
      *why_none = "no NVIDIA driver: " + gpus["nvml_error"].get<std::string>();
    else
      *why_none = "NVML lists no GPU on this node";
  }
  return count;
}

probes::ActiveAllreduce to_active(const TransportRun& run, const std::string& algorithm,
                                  uint64_t bytes) {
  probes::ActiveAllreduce a;
  a.algorithm = algorithm;
  a.status = run.status;
  a.error = run.extra.value("error", "");
  a.reason = run.reason;
  if (run.extra.contains("log_tail") && run.extra["log_tail"].is_string())
    a.reason += "; NCCL log " + run.extra["log_tail"].get<std::string>();
  a.ranks = run.extra.value("ranks", 0);
  a.bytes = bytes;
  if (!run.sizes.empty() && run.status == "ok") {
    a.busbw_gb_per_s = run.sizes[0].busbw_gbps;
    a.algbw_gb_per_s = run.sizes[0].algbw_gbps;
    a.time_us = run.sizes[0].time_us;
  }
  if (run.extra.contains("nccl_version") && run.extra["nccl_version"].is_number_integer())
    a.nccl_version = run.extra["nccl_version"].get<int>();
  a.elapsed_ms = run.extra.value("elapsed_ms", 0.0);
  return a;
}

probes::ActiveAllreduce skipped(const std::string& algorithm, int ranks, uint64_t bytes,
                                const std::string& why) {
  probes::ActiveAllreduce a;
  a.algorithm = algorithm;
  a.status = "skipped";
  a.reason = why;
  a.ranks = ranks;
  a.bytes = bytes;
  return a;
}

}  // namespace

probes::GpuActiveFacts gather_gpu_active(const GpuActiveOptions& o, const SystemRoots& roots,
                                         const Environment& env, const Json& gpus_section,
                                         ProgressSink* progress) {
  auto start = Clock::now();
  probes::GpuActiveFacts f;
  f.settings = o.settings;
  f.cuda_visible_devices = env.get("CUDA_VISIBLE_DEVICES");
  auto deadline =
      start + std::chrono::milliseconds(static_cast<int64_t>(o.settings.budget_s * 1000));
  auto done = [&] {
    f.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    return f;
  };
  std::string why_none;
  int nvml_count = nvml_gpu_count(gpus_section, &why_none);
  if (nvml_count == 0) {
    f.reason = why_none;
    f.error = "no_gpu";
    return done();
  }
  std::vector<std::string> refused;
  std::string bench = o.bench_path.empty() ? find_gpu_bench(&refused)
                                           : trusted_helper_path(o.bench_path, &refused);
  if (bench.empty()) {
    f.reason =
        "fabcheck-gpu-bench not found (this fabcheck was built without CUDA and cuBLAS, or the "
        "binary was not installed beside it; set FABKIT_GPU_BENCH)" +
        refused_suffix(refused);
    f.error = "bench_not_built";
    return done();
  }

  // 1. Per GPU figures, in the bench child. One progress unit per step; the total is known once
  // the child names its GPUs.
  int expected_gpus = std::max(nvml_count, 1);
  auto steps_for = [](int gpus) {
    return 4 * gpus + (gpus > 1 ? 4 : 0);
  };  // + 2 concurrent, 2 all-reduce
  ProgressScope scope(progress, "gpu active: starting fabcheck-gpu-bench",
                      static_cast<uint64_t>(steps_for(expected_gpus)));
  BenchRun run;
  run.program = bench;
  run.args = bench_args(o.settings, roots.sys.string());
  run.env.clear();
  for (const auto& [k, v] : env.vars()) run.env.push_back(k + "=" + v);
  run.deadline = expected_gpus > 1 ? start + std::chrono::milliseconds(static_cast<int64_t>(
                                                 o.settings.budget_s * 1000 * kBenchBudgetShare))
                                   : deadline;
  run.silence_timeout_ms = o.silence_timeout_ms;
  bool first_step = true;
  run.on_step = [&](const std::string& label) {
    scope.advance(first_step ? 0 : 1, "gpu active: " + label);
    first_step = false;
  };
  run_gpu_bench(run, &f);
  if (!f.gpus.empty() && static_cast<int>(f.gpus.size()) != expected_gpus)
    scope.set_total(static_cast<uint64_t>(steps_for(static_cast<int>(f.gpus.size()))));
  scope.advance(1);

  // 2. The PCIe link each GPU and the port above it can train (sysfs), for the copy expectations.
  for (auto& g : f.gpus) {
    SysfsLinkCapability cap = read_link_capability(roots.sys, g.bus_id);
    g.link_max = cap.device_max;
    g.upstream_max = cap.upstream_max;
  }

  // 3. The intra-node all-reduce over every GPU the child saw, default algorithm then Ring.
  int ranks = static_cast<int>(f.gpus.size());
  if (f.status == "unavailable") return done();
  if (ranks < 2) {
    // Said, not left as an empty list: a reader of a one-GPU report must not wonder whether the
    // all-reduce ran and found nothing.
    if (ranks == 1)
      f.skipped.push_back("the NCCL all-reduce: it needs 2 or more GPUs and CUDA shows 1");
    return done();
  }
  const uint64_t bytes = o.settings.allreduce_bytes;
  struct Algo {
    const char* name;
    bool ring;
  };
  for (Algo algo : {Algo{"default", false}, Algo{"Ring", true}}) {
    if (f.error == "timeout") {
      f.allreduce.push_back(skipped(algo.name, ranks, bytes,
                                    "the bench child hung (" + f.stopped_at +
                                        "): a GPU that hangs a kernel would hang NCCL too"));
      continue;
    }
    int left = ms_until(deadline);
    int share = algo.ring ? left : left / 2;
    if (share < kMinAllreduceMs) {
      f.allreduce.push_back(skipped(algo.name, ranks, bytes,
                                    "the check's time budget is spent (" +
                                        std::to_string(std::max(left, 0) / 1000) +
                                        " s left): raise --active-budget-s"));
      scope.advance(1);
      continue;
    }
    scope.advance(0, std::string("gpu active: NCCL all-reduce over ") + std::to_string(ranks) +
                         " GPUs (" + algo.name + ")");
    LocalAllreduceSpec spec;
    spec.runner_path = o.runner_path;
    spec.ranks = ranks;
    spec.bytes = bytes;
    spec.warmup = o.settings.allreduce_warmup;
    spec.iters = o.settings.allreduce_iters;
    spec.timeout_ms = share;
    spec.label = algo.ring ? "nccl-local-ring" : "nccl-local";
    if (algo.ring)
      spec.env_set["NCCL_ALGO"] = "Ring";
    else
      spec.env_unset.push_back("NCCL_ALGO");
    f.allreduce.push_back(to_active(run_local_allreduce(spec), algo.name, bytes));
    scope.advance(1);
    // A runner that is not there, or a node without NCCL, says so once.
    if (f.allreduce.back().status == "unavailable") break;
  }
  return done();
}

void append_gpu_active(Report& r, const GpuActiveOptions& options, const SystemRoots& roots,
                       const Environment& env, ProgressSink* progress) {
  Json gpus;
  for (const auto& s : r.sections)
    if (s.name == "gpus") gpus = s.facts;
  probes::GpuActiveFacts facts = gather_gpu_active(options, roots, env, gpus, progress);
  for (auto& f : probes::judge_gpu_active(facts)) r.findings.push_back(std::move(f));
  r.sections.push_back({"gpu_active", probes::to_json(facts)});
}

}  // namespace fabkit::fabric
