#include "fabric/gpu_active/bench_runner.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "common/errors.h"
#include "common/helper_program.h"
#include "fabric/gpu_active/bench_protocol.h"
#include "fabric/launch/child_process.h"
#include "fabric/wire/wire_error.h"
#include "topo/pci_bus_id.h"
#include "topo/pcie_link.h"

namespace fabkit::fabric {
namespace {

using launch::ChildProcess;
using wire::WireError;
using wire::WireErrorKind;

std::string printable(const std::string& s, size_t max) {
  std::string out;
  for (char c : s.substr(0, max)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out;
}

// The last bytes of the child's log on one line (" | " between its lines), printable only.
std::string log_tail(const std::string& log, size_t max = 1500) {
  std::string t = log.size() > max ? log.substr(log.size() - max) : log;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  std::string out;
  for (char c : t)
    out += c == '\n' ? std::string(" | ") : std::string(1, (c >= 0x20 && c < 0x7f) ? c : '?');
  return out;
}

// The state of one run: where the child is, for the messages.
struct Reader {
  probes::GpuActiveFacts* facts;
  std::map<int, size_t> gpu_at;  // CUDA index -> facts->gpus position
  bool hello = false;
  std::string step_label;  // "GPU 3 gemm_bf16": what runs now

  void stop(const std::string& status, const std::string& error, const std::string& reason) {
    facts->status = status;
    facts->error = error;
    facts->reason = reason;
    facts->stopped_at = step_label;
  }
};

std::string seconds(int ms) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f s", ms / 1000.0);
  return b;
}

std::string step_label(int gpu, const std::string& step) {
  return (gpu < 0 ? std::string("every GPU") : "GPU " + std::to_string(gpu)) + " " + step;
}

// One parsed line into the facts; false (with the run stopped) when the line ends it.
bool apply(Reader& r, const BenchLine& l, const std::string& raw, const BenchRun& run) {
  auto protocol_error = [&](const std::string& why) {
    r.stop("incomplete", "child_protocol",
           "fabcheck-gpu-bench wrote an invalid line: " + why + " (line: '" + printable(raw, 80) +
               "')");
    return false;
  };
  switch (l.kind) {
    case BenchLineKind::kInvalid:
      return protocol_error(l.text);
    case BenchLineKind::kUnavailable:
      if (r.hello) return protocol_error("UNAVAILABLE after HELLO");
      r.stop("unavailable", "unavailable", l.text);
      return false;
    case BenchLineKind::kFailed:
      r.stop("incomplete", l.word, "fabcheck-gpu-bench failed: " + l.text);
      return false;
    case BenchLineKind::kHello:
      if (r.hello) return protocol_error("a second HELLO");
      r.hello = true;
      r.facts->cuda_runtime_version = l.cuda_runtime;
      r.facts->cuda_driver_version = l.cuda_driver;
      r.facts->cublas_version = l.cublas;
      for (const auto& d : l.devices) {
        probes::ActiveGpu g;
        g.cuda_index = d.index;
        g.name = d.name;
        g.bus_id = topo::normalize_bus_id(d.bus_id).value_or(d.bus_id);
        g.memory_bytes = d.memory_bytes;
        r.gpu_at[d.index] = r.facts->gpus.size();
        r.facts->gpus.push_back(g);
      }
      return true;
    case BenchLineKind::kStep:
      if (!r.hello) return protocol_error("STEP before HELLO");
      if (l.gpu >= 0 && !r.gpu_at.count(l.gpu))
        return protocol_error("STEP for GPU " + std::to_string(l.gpu) + ", not in HELLO");
      r.step_label = step_label(l.gpu, l.step);
      if (run.on_step) run.on_step(r.step_label);
      return true;
    case BenchLineKind::kFigure: {
      if (!r.hello) return protocol_error("FIGURE before HELLO");
      auto it = r.gpu_at.find(l.gpu);
      if (it == r.gpu_at.end())
        return protocol_error("FIGURE for GPU " + std::to_string(l.gpu) + ", not in HELLO");
      probes::ActiveGpu& g = r.facts->gpus[it->second];
      if (g.figure(l.step))
        return protocol_error("a second " + l.step + " figure for GPU " + std::to_string(l.gpu));
      probes::ActiveFigure f;
      f.name = l.step;
      f.measured = l.value;
      f.error = l.error;
      f.error_kind = l.error_kind.empty() && !l.error.empty() ? "cuda_error" : l.error_kind;
      f.iters = l.iters;
      f.elapsed_ms = l.elapsed_ms;
      g.figures.push_back(f);
      if (!l.link_speed.empty() || !l.link_width.empty())
        g.link_under_load = {topo::pcie_generation_from_speed(l.link_speed),
                             topo::pcie_width_from_text(l.link_width)};
      return true;
    }
    case BenchLineKind::kDone:
      if (!r.hello) return protocol_error("DONE before HELLO");
      r.facts->status = "ran";
      r.step_label.clear();
      return false;
  }
  return protocol_error("unhandled line kind");
}

launch::ChildOptions child_options(const BenchRun& run) {
  launch::ChildOptions o;
  o.argv = {run.program};
  o.argv.insert(o.argv.end(), run.args.begin(), run.args.end());
  o.env = run.env;
  o.own_process_group = true;  // SIGINT on fabcheck stops it too (install_stop_handler)
  o.stdout_is_log = true;
  o.stderr_into_stdout = true;
  o.control_fd = true;
  o.max_log_bytes = 1u << 20;
  o.stop_grace_ms = 0;  // nothing to save in a child we gave up on: SIGKILL
  return o;
}

}  // namespace

std::vector<std::string> bench_args(const probes::GpuActiveSettings& s,
                                    const std::string& sysfs_root) {
  return {"--gemm-n",
          std::to_string(s.gemm_n),
          "--gemm-warmup",
          std::to_string(s.gemm_warmup),
          "--gemm-iters",
          std::to_string(s.gemm_iters),
          "--device-copy-bytes",
          std::to_string(s.device_copy_bytes),
          "--device-copy-warmup",
          std::to_string(s.device_copy_warmup),
          "--device-copy-iters",
          std::to_string(s.device_copy_iters),
          "--host-copy-bytes",
          std::to_string(s.host_copy_bytes),
          "--host-copy-warmup",
          std::to_string(s.host_copy_warmup),
          "--host-copy-iters",
          std::to_string(s.host_copy_iters),
          "--sysfs",
          sysfs_root};
}

std::string find_gpu_bench(std::vector<std::string>* refused) {
  return find_helper_program({"fabcheck-gpu-bench", "FABKIT_GPU_BENCH"}, self_executable_dir(),
                             refused);
}

void run_gpu_bench(const BenchRun& run, probes::GpuActiveFacts* facts) {
  facts->bench_path = run.program;
  Reader r{facts, {}, false, ""};
  std::unique_ptr<ChildProcess> child;
  try {
    child = std::make_unique<ChildProcess>(child_options(run));
  } catch (const SysErrorException& e) {
    r.stop("unavailable", "bench_not_started",
           std::string("cannot start fabcheck-gpu-bench: ") + e.what());
    return;
  }
  for (;;) {
    bool budget = false;
    wire::Deadline line_deadline = wire::deadline_in_ms(run.silence_timeout_ms);
    if (run.deadline <= line_deadline) {
      line_deadline = run.deadline;
      budget = true;
    }
    std::string raw;
    try {
      raw = child->read_line(ChildProcess::Stream::kControl, line_deadline, kMaxBenchLineBytes);
    } catch (const WireError& e) {
      std::string where = r.step_label.empty() ? "before its first step" : "during " + r.step_label;
      switch (e.kind()) {
        case WireErrorKind::kTimeout:
          if (budget)
            r.stop("incomplete", "budget",
                   "the check's time budget ran out " + where + "; the child was killed");
          else
            r.stop("incomplete", "timeout",
                   "fabcheck-gpu-bench wrote nothing for " + seconds(run.silence_timeout_ms) + " " +
                       where + " (a step takes seconds on a healthy GPU): killed");
          break;
        case WireErrorKind::kOversized:
          r.stop("incomplete", "child_protocol",
                 "fabcheck-gpu-bench wrote a line over " + std::to_string(kMaxBenchLineBytes) +
                     " bytes " + where);
          break;
        case WireErrorKind::kClosed: {
          facts->bench_exit = child->wait_exit(wire::deadline_in_ms(5000));
          size_t cut = child->pending_bytes(ChildProcess::Stream::kControl);
          if (cut > 0)
            r.stop("incomplete", "child_protocol",
                   "fabcheck-gpu-bench's output ended mid-line (" + std::to_string(cut) +
                       " bytes without a newline, a truncated frame) " + where +
                       "; it ended with " + facts->bench_exit);
          else
            r.stop(
                "incomplete", "child_died",
                "fabcheck-gpu-bench ended " + where + " before DONE (" + facts->bench_exit + ")");
          break;
        }
        default:
          r.stop("incomplete", "io_error",
                 std::string("reading fabcheck-gpu-bench's fd 3: ") + e.what());
      }
      break;
    }
    if (!apply(r, parse_bench_line(raw), raw, run)) break;
  }
  if (facts->bench_exit.empty()) {
    // DONE and UNAVAILABLE end with exit 0 in a moment; anything else is killed now.
    bool clean = facts->status == "ran" || facts->status == "unavailable";
    facts->bench_exit = child->wait_exit(clean ? wire::deadline_in_ms(10000) : wire::Clock::now());
  }
  if (facts->status != "ran" && facts->status != "unavailable") {
    std::string tail = log_tail(child->log());
    if (!tail.empty()) facts->reason += "; its log ends: " + tail;
  }
  if (facts->status == "ran" && facts->bench_exit != "exit status 0")
    r.stop("incomplete", "child_died",
           "fabcheck-gpu-bench said DONE but ended with " + facts->bench_exit);
}

}  // namespace fabkit::fabric
