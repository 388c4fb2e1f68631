// The active check's judge: each measured figure against the expected-performance model, the
// PCIe link as trained under load against what the GPU and its port can train, concurrent copies
// against the same GPU alone, and the all-reduce runs. Pure.
#include <cstdio>
#include <map>
#include <set>

#include "probes/gpu_active/gpu_active_facts.h"
#include "probes/gpu_active/gpu_perf_model.h"

namespace fabkit::probes {
namespace {

std::string fmt(double v, int digits = 1) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

std::string gpu_subject(const ActiveGpu& g) {
  return "GPU " + std::to_string(g.cuda_index) + (g.bus_id.empty() ? "" : " (" + g.bus_id + ")");
}

bool is_host_copy(const std::string& name) {
  return name == kFigureH2d || name == kFigureD2h || name == kFigureH2dConcurrent ||
         name == kFigureD2hConcurrent;
}

std::string unit_of(const std::string& figure) { return figure == kFigureGemm ? "TFLOPS" : "GB/s"; }

topo::PcieLink capable_link(const ActiveGpu& g) {
  return narrower_link(g.link_max, g.upstream_max);
}

Expectation expectation_for(const ActiveGpu& g, const std::string& figure) {
  const GpuSku* sku = match_gpu_sku(g.name);
  if (figure == kFigureGemm) return expected_gemm_tflops(sku);
  if (figure == kFigureDeviceCopy) return expected_device_copy_gb_per_s(sku);
  if (is_host_copy(figure)) return expected_host_copy_gb_per_s(sku, capable_link(g));
  return {std::nullopt, "no model for " + figure};
}

// The SKU every GPU shares, for the all-reduce expectation; null (with why) when they differ.
const GpuSku* common_sku(const GpuActiveFacts& f, std::string* why) {
  const GpuSku* first = nullptr;
  for (size_t i = 0; i < f.gpus.size(); ++i) {
    const GpuSku* s = match_gpu_sku(f.gpus[i].name);
    if (i == 0) first = s;
    if (s != first) {
      *why = "the GPUs are of different models";
      return nullptr;
    }
  }
  if (first == nullptr) *why = "no entry in the expected-performance model";
  return first;
}

Expectation allreduce_expectation(const GpuActiveFacts& f, const ActiveAllreduce& a) {
  std::string why;
  const GpuSku* sku = common_sku(f, &why);
  if (sku == nullptr && a.ranks >= 2) return {std::nullopt, why};
  return expected_allreduce_busbw_gb_per_s(sku, a.ranks);
}

std::optional<double> fraction(const std::optional<double>& measured, const Expectation& e) {
  if (!measured || !e.value || *e.value <= 0) return std::nullopt;
  return *measured / *e.value;
}

struct LowFigure {
  const char* code;
  const char* what;
  const char* fix;
};

LowFigure low_figure(const std::string& figure) {
  if (figure == kFigureGemm)
    return {"gpu_active.gemm_low", "bf16 GEMM",
            "nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE -i N (clock event reasons: HW "
            "slowdown, power brake, thermal, power cap); nvidia-smi (another process on the GPU?); "
            "check cooling and the power limit (nvidia-smi -q -d POWER); if it stays low, drain "
            "and reset the GPU (nvidia-smi -r -i N) or replace it"};
  if (figure == kFigureDeviceCopy)
    return {"gpu_active.memory_bandwidth_low", "device memory copy",
            "nvidia-smi -q -d CLOCK,PERFORMANCE,ECC,ROW_REMAPPER -i N (memory clock held low, "
            "HW slowdown, pending row remaps); another process using the GPU (nvidia-smi); "
            "drain and reset the GPU if it persists"};
  return {"gpu_active.host_copy_low", "pinned host<->device copy",
          "lspci -vv -s BUS | grep -E 'LnkCap|LnkSta' (a link trained below Gen/width: reseat "
          "the GPU or riser, check the slot's BIOS setting); numactl -H and the GPU's NUMA node "
          "(pinned memory on the far socket); IOMMU in passthrough (iommu=pt) when enabled; "
          "nvidia-smi -q -d PERFORMANCE for throttling"};
}

void judge_gpu(const ActiveGpu& g, std::vector<Finding>& out) {
  std::string subject = gpu_subject(g);
  for (const auto& fig : g.figures) {
    if (!fig.error.empty()) {
      std::string idx = std::to_string(g.cuda_index);
      if (fig.error_kind == "not_run") continue;  // the failed step's own figure says why
      if (fig.error_kind == "out_of_memory")
        out.push_back(
            warn("gpu_active.gpu_busy", subject,
                 fig.name + " could not allocate its buffers on " + g.name + ": " + fig.error,
                 "nvidia-smi -i " + idx +
                     " (another process holds the GPU's memory); run "
                     "the check on an idle node"));
      else if (fig.error_kind == "wrong_result")
        out.push_back(fail(
            "gpu_active.wrong_result", subject,
            fig.name + " on " + g.name + " computed a wrong result: " + fig.error,
            "silent data corruption: drain the node; nvidia-smi -q -d ECC,ROW_REMAPPER -i " + idx +
                "; dmesg | grep -i xid; reset the GPU (nvidia-smi -r) and rerun, "
                "replace it if it repeats"));
      else
        out.push_back(fail("gpu_active.step_failed", subject,
                           fig.name + " failed on " + g.name + ": " + fig.error,
                           "nvidia-smi -q -i " + idx +
                               "; dmesg | grep -i xid (an Xid names the fault); drain the node and "
                               "reset the GPU (nvidia-smi -r) or replace it"));
      continue;
    }
    // Concurrent copies are reported, not judged against the single-GPU expectation: GPUs that
    // share a switch uplink by design halve each other (gpu_active.pcie_shared says so).
    if (fig.name == kFigureH2dConcurrent || fig.name == kFigureD2hConcurrent) continue;
    Expectation e = expectation_for(g, fig.name);
    auto frac = fraction(fig.measured, e);
    if (!frac || *frac >= kWarnBelowFraction) continue;
    LowFigure low = low_figure(fig.name);
    std::string unit = unit_of(fig.name);
    std::string msg = std::string(low.what) + " " + fig.name + " reached " + fmt(*fig.measured) +
                      " " + unit + ", " + fmt(*frac * 100, 0) + "% of the expected " +
                      fmt(*e.value) + " " + unit + " (" + e.basis + ")";
    if (is_host_copy(fig.name) && g.link_under_load.generation && g.link_under_load.width) {
      Expectation on_link = expected_host_copy_on_link_gb_per_s(g.link_under_load);
      msg += "; the link ran at " + topo::to_string(g.link_under_load) + " under load";
      if (on_link.value) msg += ", which carries at most ~" + fmt(*on_link.value) + " GB/s";
    }
    std::string fix = low.fix;
    for (size_t p; (p = fix.find("-i N")) != std::string::npos;)
      fix.replace(p, 4, "-i " + std::to_string(g.cuda_index));
    for (size_t p; (p = fix.find("-s BUS")) != std::string::npos;)
      fix.replace(p, 6, "-s " + g.bus_id);
    if (*frac < kFailBelowFraction)
      out.push_back(fail(low.code, subject, msg, fix));
    else
      out.push_back(warn(low.code, subject, msg, fix));
  }
  // The link as trained while the copy ran: an idle GPU may sit at a low speed (ASPM), one under
  // load trains to the best both ends allow. Below that under load is the fault itself.
  topo::PcieLink cap = capable_link(g);
  const auto& now = g.link_under_load;
  bool slower = now.generation && cap.generation && *now.generation < *cap.generation;
  bool narrower = now.width && cap.width && *now.width < *cap.width;
  if (slower || narrower) {
    double have = topo::pcie_data_rate_gbps(now.generation.value_or(0), now.width.value_or(0));
    double could = topo::pcie_data_rate_gbps(cap.generation.value_or(0), cap.width.value_or(0));
    std::string lost =
        have > 0 && could > 0 ? " (" + fmt(have / 8) + " of " + fmt(could / 8) + " GB/s)" : "";
    out.push_back(warn("gpu_active.pcie_link_degraded", subject,
                       "under load the PCIe link ran at " + topo::to_string(now) +
                           " while the GPU and its upstream port can train " +
                           topo::to_string(cap) + lost,
                       "lspci -vv -s " + g.bus_id +
                           " | grep -E 'LnkCap|LnkSta'; reseat the GPU (or its riser/cable), check "
                           "the slot's link settings in the BIOS, and if it persists move or "
                           "replace the GPU"));
  }
  // Alone vs all at once: the GPUs behind one upstream link share its bandwidth.
  for (auto [alone, together] :
       {std::pair{kFigureH2d, kFigureH2dConcurrent}, std::pair{kFigureD2h, kFigureD2hConcurrent}}) {
    const ActiveFigure* a = g.figure(alone);
    const ActiveFigure* c = g.figure(together);
    if (!a || !c || !a->measured || !c->measured || *a->measured <= 0) continue;
    double ratio = *c->measured / *a->measured;
    if (ratio < kSharedBelowFraction)
      out.push_back(info("gpu_active.pcie_shared", subject,
                         std::string(alone) + " with every GPU copying at once reached " +
                             fmt(*c->measured) + " GB/s, " + fmt(ratio * 100, 0) + "% of the " +
                             fmt(*a->measured) +
                             " GB/s it reached alone: it shares an upstream PCIe link (switch or "
                             "root port) with other GPUs (nvidia-smi topo -m shows which)"));
  }
}

void judge_allreduce(const GpuActiveFacts& f, const ActiveAllreduce& a, std::vector<Finding>& out) {
  std::string subject = "all-reduce " + a.algorithm + " (" + std::to_string(a.ranks) + " GPUs)";
  if (a.status == "unavailable" || a.status == "skipped") {
    out.push_back(info("gpu_active.allreduce_unavailable", subject, a.status + ": " + a.reason));
    return;
  }
  if (a.status != "ok") {
    out.push_back(fail("gpu_active.allreduce_failed", subject,
                       "the intra-node NCCL all-reduce failed (" + a.error + "): " + a.reason,
                       "nvidia-smi topo -m; nvidia-smi nvlink -s; systemctl status "
                       "nvidia-fabricmanager (NVSwitch systems); rerun with NCCL_DEBUG=INFO "
                       "(docs/gpu-node.md); drain the node if it persists"));
    return;
  }
  Expectation e = allreduce_expectation(f, a);
  auto frac = fraction(a.busbw_gb_per_s, e);
  if (!frac || *frac >= kWarnBelowFraction) return;
  std::string msg = "busbw " + fmt(*a.busbw_gb_per_s) + " GB/s at " +
                    std::to_string(a.bytes >> 20) + " MiB, " + fmt(*frac * 100, 0) +
                    "% of the expected " + fmt(*e.value) + " GB/s (" + e.basis + ")";
  std::string fix =
      "nvidia-smi nvlink -s (a link down or at reduced width); nvidia-smi topo -m (GPU pairs not "
      "on NV#); systemctl status nvidia-fabricmanager; NCCL_P2P_DISABLE / NCCL_SHM_DISABLE / "
      "NCCL_ALGO in the environment";
  if (*frac < kFailBelowFraction)
    out.push_back(fail("gpu_active.allreduce_low", subject, msg, fix));
  else
    out.push_back(warn("gpu_active.allreduce_low", subject, msg, fix));
}

std::string settings_text(const GpuActiveSettings& s) {
  return "GEMM " + std::to_string(s.gemm_n) + "^3 x" + std::to_string(s.gemm_iters) + ", copies " +
         std::to_string(s.device_copy_bytes >> 20) + "/" + std::to_string(s.host_copy_bytes >> 20) +
         " MiB, all-reduce " + std::to_string(s.allreduce_bytes >> 20) + " MiB";
}

}  // namespace

const ActiveFigure* ActiveGpu::figure(const std::string& n) const {
  for (const auto& f : figures)
    if (f.name == n) return &f;
  return nullptr;
}

std::vector<Finding> judge_gpu_active(const GpuActiveFacts& f) {
  std::vector<Finding> out;
  if (f.status == "unavailable") {
    out.push_back(info("gpu_active.unavailable", "active GPU check", f.reason));
    return out;
  }
  out.push_back(info("gpu_active.ran", "active GPU check",
                     std::to_string(f.gpus.size()) + " GPU(s) measured in " +
                         fmt(f.elapsed_ms / 1000, 1) + " s (" + settings_text(f.settings) + ")"));
  if (f.status == "incomplete") {
    bool hung = f.error == "timeout";
    std::string msg = "the check stopped early (" + f.error + "): " + f.reason;
    if (!f.stopped_at.empty()) msg += "; it was running " + f.stopped_at;
    if (hung)
      out.push_back(fail("gpu_active.hung", "active GPU check", msg,
                         "nvidia-smi (does it answer? a GPU that hangs a kernel hangs it too); "
                         "dmesg | grep -i xid; drain the node and reset the GPU (nvidia-smi -r) "
                         "or reboot"));
    else
      out.push_back(
          warn("gpu_active.incomplete", "active GPU check", msg,
               f.error == "budget"
                   ? "give more time: fabcheck node --active --active-budget-s S"
                   : "run fabcheck-gpu-bench by hand (docs/gpu-node.md) to see its output; "
                     "dmesg | grep -i xid"));
  }
  for (const auto& s : f.skipped) out.push_back(info("gpu_active.skipped", "active GPU check", s));
  std::set<std::string> unknown;
  for (const auto& g : f.gpus)
    if (match_gpu_sku(g.name) == nullptr && unknown.insert(g.name).second)
      out.push_back(info("gpu_active.unknown_sku", g.name,
                         "the expected-performance model has no entry for '" + g.name +
                             "': its figures are reported without an expectation (the PCIe copies "
                             "are still judged against the link sysfs reports)"));
  for (const auto& g : f.gpus) judge_gpu(g, out);
  for (const auto& a : f.allreduce) judge_allreduce(f, a, out);
  return out;
}

namespace {

Json opt(const std::optional<double>& v) { return v ? Json(*v) : Json(); }
Json opt_int(const std::optional<int>& v) { return v ? Json(*v) : Json(); }
Json opt_str(const std::string& s) { return s.empty() ? Json() : Json(s); }

// The judge's word on a fraction, for renderers to color by (they do not repeat the thresholds):
// null when the figure is not judged (no expectation, or a concurrent copy).
Json verdict(const std::optional<double>& frac, bool judged) {
  if (!frac || !judged) return Json();
  return *frac < kFailBelowFraction ? "fail" : *frac < kWarnBelowFraction ? "warn" : "ok";
}

Json link_json(const topo::PcieLink& l) {
  return {{"generation", opt_int(l.generation)}, {"width", opt_int(l.width)}};
}

Json figure_json(const ActiveGpu& g, const ActiveFigure& fig) {
  Expectation e = expectation_for(g, fig.name);
  auto frac = fraction(fig.measured, e);
  bool judged = fig.name != kFigureH2dConcurrent && fig.name != kFigureD2hConcurrent;
  return {{"name", fig.name},
          {"unit", unit_of(fig.name)},
          {"measured", opt(fig.measured)},
          {"expected", opt(e.value)},
          {"fraction", opt(frac)},
          {"verdict", verdict(frac, judged)},
          {"basis", e.basis},
          {"error", opt_str(fig.error)},
          {"error_kind", opt_str(fig.error_kind)},
          {"iters", fig.iters},
          {"elapsed_ms", fig.elapsed_ms}};
}

}  // namespace

Json to_json(const GpuActiveFacts& f) {
  const auto& s = f.settings;
  Json j = {
      {"status", f.status},
      {"reason", opt_str(f.reason)},
      {"error", opt_str(f.error)},
      {"stopped_at", opt_str(f.stopped_at)},
      {"elapsed_ms", f.elapsed_ms},
      {"settings",
       {{"budget_s", s.budget_s},
        {"gemm_n", s.gemm_n},
        {"gemm_warmup", s.gemm_warmup},
        {"gemm_iters", s.gemm_iters},
        {"device_copy_bytes", s.device_copy_bytes},
        {"device_copy_warmup", s.device_copy_warmup},
        {"device_copy_iters", s.device_copy_iters},
        {"host_copy_bytes", s.host_copy_bytes},
        {"host_copy_warmup", s.host_copy_warmup},
        {"host_copy_iters", s.host_copy_iters},
        {"allreduce_bytes", s.allreduce_bytes},
        {"allreduce_warmup", s.allreduce_warmup},
        {"allreduce_iters", s.allreduce_iters}}},
      {"bench",
       {{"path", opt_str(f.bench_path)},
        {"exit", opt_str(f.bench_exit)},
        {"cuda_runtime_version", opt_int(f.cuda_runtime_version)},
        {"cuda_driver_version", opt_int(f.cuda_driver_version)},
        {"cublas_version", opt_int(f.cublas_version)}}},
      {"cuda_visible_devices", f.cuda_visible_devices ? Json(*f.cuda_visible_devices) : Json()}};
  Json gpus = Json::array();
  for (const auto& g : f.gpus) {
    const GpuSku* sku = match_gpu_sku(g.name);
    Json figures = Json::array();
    for (const auto& fig : g.figures) figures.push_back(figure_json(g, fig));
    topo::PcieLink cap = capable_link(g);
    gpus.push_back({{"index", g.cuda_index},
                    {"name", g.name},
                    {"bus_id", opt_str(g.bus_id)},
                    {"memory_bytes", g.memory_bytes ? Json(*g.memory_bytes) : Json()},
                    {"sku", sku ? Json(sku->id) : Json()},
                    {"sku_label", sku ? Json(sku->label) : Json()},
                    {"pcie",
                     {{"under_load", link_json(g.link_under_load)},
                      {"gpu_max", link_json(g.link_max)},
                      {"upstream_max", link_json(g.upstream_max)},
                      {"capable", link_json(cap)}}},
                    {"figures", figures}});
  }
  j["gpus"] = gpus;
  Json ar = Json::array();
  for (const auto& a : f.allreduce) {
    Expectation e = allreduce_expectation(f, a);
    ar.push_back({{"algorithm", a.algorithm},
                  {"nccl_algo", a.algorithm == "default" ? Json() : Json(a.algorithm)},
                  {"status", a.status},
                  {"error", opt_str(a.error)},
                  {"reason", opt_str(a.reason)},
                  {"ranks", a.ranks},
                  {"bytes", a.bytes},
                  {"busbw_gb_per_s", opt(a.busbw_gb_per_s)},
                  {"algbw_gb_per_s", opt(a.algbw_gb_per_s)},
                  {"time_us", opt(a.time_us)},
                  {"nccl_version", opt_int(a.nccl_version)},
                  {"expected", opt(e.value)},
                  {"fraction", opt(fraction(a.busbw_gb_per_s, e))},
                  {"verdict", verdict(fraction(a.busbw_gb_per_s, e), true)},
                  {"basis", e.basis},
                  {"elapsed_ms", a.elapsed_ms}});
  }
  j["allreduce"] = ar;
  j["skipped"] = f.skipped;
  return j;
}

}  // namespace fabkit::probes
