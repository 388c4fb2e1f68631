// GPU health findings from NVML facts, with severities a Slurm health check acts on: fail drains
// (a GPU that lost memory integrity or fell off the bus: jobs on it crash or compute wrong
// answers), warn never drains (a GPU that runs, slower or shared). The NVLink and fabric findings
// are gpu_link_judge.cc. docs/findings/gpu.md lists every code and the rules.
#include <map>

#include "probes/gpu/gpu_judge_detail.h"
#include "probes/gpu/nvml_types.h"

namespace fabkit::probes {
namespace {

using gpu_detail::gpu_name;
using gpu_detail::index_text;
using gpu_detail::subject_of;

// Within this many degrees C of the slowdown threshold a GPU is about to cut its clocks.
constexpr int kTemperatureMarginC = 5;

std::string reset_fix(const GpuDevice& d) {
  return "drain the node (`scontrol update NodeName=$(hostname -s) State=DRAIN Reason=...`), "
         "stop the GPU's processes, then reset it: `nvidia-smi -r -i " +
         index_text(d) + "` (or reboot)";
}

void judge_lost(const GpuDevice& d, std::vector<Finding>& out) {
  bool lost = false, reset = false;
  for (const auto& [call, code] : d.error_codes) {
    lost = lost || code == nvml::kErrorGpuIsLost;
    reset = reset || code == nvml::kErrorResetRequired;
  }
  if (lost)
    out.push_back(fail("gpu.lost", subject_of(d),
                       gpu_name(d) + " has fallen off the bus: NVML answers GPU is lost (the "
                                     "kernel log shows Xid 79); nothing can run on it",
                       "`dmesg | grep -i xid`; " + reset_fix(d) +
                           "; if it falls off again, reseat or replace the GPU (RMA) and check "
                           "the slot/riser and its power"));
  else if (reset)
    out.push_back(fail("gpu.reset_required", subject_of(d),
                       gpu_name(d) + ": NVML answers GPU requires reset (after an uncorrectable "
                                     "error or a hang the GPU refuses new work)",
                       reset_fix(d)));
}

void judge_memory(const GpuDevice& d, std::vector<Finding>& out) {
  const GpuHealth& h = d.health;
  const std::string s = subject_of(d), g = gpu_name(d);
  uint64_t vol_unc = h.ecc.volatile_counts.uncorrected.value_or(0);
  uint64_t agg_unc = h.ecc.aggregate_counts.uncorrected.value_or(0);
  if (vol_unc > 0)
    out.push_back(fail("gpu.ecc_uncorrected", s,
                       g + ": " + std::to_string(vol_unc) +
                           " uncorrectable ECC error(s) since the driver loaded (volatile): data "
                           "in GPU memory was corrupted; jobs on it crash (Xid 48/94/95) or are "
                           "wrong",
                       reset_fix(d) +
                           " so the row is remapped; `nvidia-smi -q -d ECC,ROW_REMAPPER -i " +
                           index_text(d) + "`; if errors return after the reset, RMA the GPU"));
  else if (agg_unc > 0)
    out.push_back(warn("gpu.ecc_uncorrected_history", s,
                       g + ": " + std::to_string(agg_unc) +
                           " uncorrectable ECC error(s) over the board's life (aggregate), none "
                           "since the driver loaded",
                       "`nvidia-smi -q -d ECC,ROW_REMAPPER -i " + index_text(d) +
                           "`: no action while the volatile count stays 0 and no remap is "
                           "pending; a board that keeps adding them is an RMA candidate"));
  if (h.ecc.enabled && !*h.ecc.enabled)
    out.push_back(warn("gpu.ecc_disabled", s,
                       g + ": ECC is off (NVML answers ECC mode for this GPU, so it has ECC): "
                           "memory errors go undetected and data-center GPUs ship with it on",
                       "`nvidia-smi -i " + index_text(d) + " -e 1`, then reset the GPU or reboot"));
  if (h.ecc.enabled && h.ecc.pending_enabled && *h.ecc.enabled != *h.ecc.pending_enabled)
    out.push_back(info("gpu.mode_change_pending", s,
                       g + ": ECC turns " + (*h.ecc.pending_enabled ? "on" : "off") +
                           " at the next GPU reset or reboot"));
  if (h.retired_pages.pending.value_or(false))
    out.push_back(fail("gpu.retired_pages_pending", s,
                       g + ": memory pages are waiting to be retired (" +
                           std::to_string(h.retired_pages.double_bit.value_or(0)) +
                           " retired for double-bit, " +
                           std::to_string(h.retired_pages.multiple_single_bit.value_or(0)) +
                           " for repeated single-bit errors); until a reset they stay in use",
                       reset_fix(d) + "; a board past NVIDIA's retirement limit is an RMA"));
  if (!h.remapped_rows) return;
  const RemappedRowsFacts& r = *h.remapped_rows;
  std::string rows = std::to_string(r.corrected) + " row(s) remapped for correctable and " +
                     std::to_string(r.uncorrected) + " for uncorrectable errors";
  if (r.failure)
    out.push_back(fail("gpu.remap_failed", s,
                       g + ": a row remapping failed (" + rows +
                           "): the GPU ran out of spare rows in a bank and cannot contain memory "
                           "errors any more",
                       "drain the node and RMA the GPU (NVIDIA's row-remapping guidance: a remap "
                       "failure is a replacement); `nvidia-smi -q -d ROW_REMAPPER -i " +
                           index_text(d) + "`"));
  else if (r.pending)
    out.push_back(fail("gpu.remap_pending", s,
                       g + ": a row remapping is pending (" + rows +
                           "): the faulty row stays in use until the GPU is reset",
                       reset_fix(d)));
}

struct Reason {
  uint64_t bit;
  const char* code;
  Severity severity;
  const char* name;     // nvml.h's current name
  const char* meaning;  // what it means, from nvml.h's description
  const char* fix;
};

const Reason kReasons[] = {
    {nvml::kClocksHwSlowdown, "gpu.clocks_hw_slowdown", Severity::kWarn, "HW Slowdown",
     "the GPU cut its clocks by half or more: too hot, the external power brake, or power draw "
     "above what the board allows (NVML may also show it for a moment during a clock change)",
     "check cooling and power: `nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i N`; re-run "
     "the check to see whether it persists"},
    {nvml::kClocksHwThermalSlowdown, "gpu.clocks_hw_thermal", Severity::kWarn,
     "HW Thermal Slowdown", "the GPU cut its clocks by half or more because it is too hot",
     "check cooling: fans, airflow, inlet temperature and blocked filters (`nvidia-smi -q -d "
     "TEMPERATURE -i N`); drain the node if it persists"},
    {nvml::kClocksHwPowerBrakeSlowdown, "gpu.clocks_hw_power_brake", Severity::kWarn,
     "HW Power Brake Slowdown",
     "the GPU cut its clocks by half or more because the system asserted the external power "
     "brake (power supply or BMC power capping)",
     "check the power supplies and the BMC's power capping and event log (`ipmitool sel list`)"},
    {nvml::kClocksSwThermalSlowdown, "gpu.clocks_sw_thermal", Severity::kWarn,
     "SW Thermal Slowdown",
     "the driver lowered clocks to keep the GPU or its memory under the maximum operating "
     "temperature",
     "check cooling (`nvidia-smi -q -d TEMPERATURE -i N`): an idle GPU should not be near its "
     "limit"},
    {nvml::kClocksSwPowerCap, "gpu.clocks_sw_power_cap", Severity::kInfo, "SW Power Cap",
     "clocks are held so the GPU stays within its power limit (expected under full load; at "
     "idle, a power limit set low: `nvidia-smi -q -d POWER`)",
     ""},
};

std::string with_index(std::string text, const GpuDevice& d) {
  for (size_t at = text.find("-i N"); at != std::string::npos; at = text.find("-i N", at))
    text.replace(at, 4, "-i " + index_text(d));
  return text;
}

void judge_clocks_and_heat(const GpuDevice& d, std::vector<Finding>& out) {
  const GpuHealth& h = d.health;
  const std::string s = subject_of(d), g = gpu_name(d);
  if (h.clocks)
    for (const auto& r : kReasons) {
      if (!(h.clocks->mask & r.bit)) continue;
      std::string msg = g + ": clock event reason " + r.name + " is active: " + r.meaning;
      out.push_back(r.severity == Severity::kWarn ? warn(r.code, s, msg, with_index(r.fix, d))
                                                  : info(r.code, s, msg));
    }
  const ThermalFacts& t = h.thermal;
  if (t.temperature_c && t.slowdown_c && *t.temperature_c >= *t.slowdown_c - kTemperatureMarginC)
    out.push_back(warn("gpu.temperature_high", s,
                       g + ": " + std::to_string(*t.temperature_c) + " °C, " +
                           (*t.temperature_c >= *t.slowdown_c
                                ? "at or above"
                                : "within " + std::to_string(kTemperatureMarginC) + " °C of") +
                           " its slowdown threshold (" + std::to_string(*t.slowdown_c) + " °C" +
                           (t.shutdown_c ? "; shutdown at " + std::to_string(*t.shutdown_c) + " °C"
                                         : std::string()) +
                           ")",
                       "check cooling: fans, airflow, inlet temperature; `nvidia-smi -q -d "
                       "TEMPERATURE -i " +
                           index_text(d) + "`"));
  if (h.persistence_mode && !*h.persistence_mode)
    out.push_back(warn("gpu.persistence_off", s,
                       g + ": persistence mode is off: the driver tears the GPU down whenever no "
                           "process holds it, so every job start pays the GPU's initialisation "
                           "and settings made with nvidia-smi can be lost",
                       "`systemctl enable --now nvidia-persistenced` (or `nvidia-smi -i " +
                           index_text(d) + " -pm 1`)"));
}

std::string gbps(double v) { return std::to_string(static_cast<long>(v + 0.5)); }

void judge_pcie(const GpuDevice& d, std::vector<Finding>& out) {
  const GpuHealth& h = d.health;
  const topo::PcieLink &cur = h.pcie_current, &max = h.pcie_max;
  const std::string s = subject_of(d), g = gpu_name(d);
  const std::string seen = g + ": PCIe " + topo::to_string(cur) + " of " + topo::to_string(max) +
                           " possible (NVML: the GPU and its slot)";
  // Widths do not change with load: a narrower link is a fault (a card not seated, a bad riser
  // or slot). Speeds do: an idle GPU lowers its link speed to save power, so a lower generation
  // alone is not judged (docs/findings/gpu.md).
  if (cur.width && max.width && *cur.width < *max.width) {
    int gen = max.generation.value_or(cur.generation.value_or(0));
    double now = topo::pcie_data_rate_gbps(gen, *cur.width);
    double could = topo::pcie_data_rate_gbps(gen, *max.width);
    std::string lost = now > 0 && could > 0
                           ? ": " + gbps(now) + " of " + gbps(could) +
                                 " Gbit/s per direction at Gen" + std::to_string(gen)
                           : "";
    out.push_back(warn("gpu.pcie_width_degraded", s, seen + lost,
                       "reseat the GPU and check its riser/slot and cable; compare `lspci -vv -s " +
                           d.bus_id + " | grep -E 'LnkCap|LnkSta'`"));
  }
  if (cur.generation && max.generation && *cur.generation < *max.generation) {
    bool idle = h.clocks && (h.clocks->mask & nvml::kClocksGpuIdle);
    bool busy = h.processes && !h.processes->empty();
    if (busy && h.clocks && !idle)
      out.push_back(warn("gpu.pcie_speed_degraded", s,
                         seen + " while the GPU is busy (processes running, not idle): a link "
                                "that trains below its speed under load loses bandwidth",
                         "`nvidia-smi -q -d PCI -i " + index_text(d) +
                             "` under load; reseat the GPU, check the riser/slot and the BIOS's "
                             "PCIe speed setting"));
    else
      out.push_back(info("gpu.pcie_speed_reduced", s,
                         seen +
                             ": a lower speed at idle is power saving, not a fault; re-read it "
                             "under load (`nvidia-smi -q -d PCI -i " +
                             index_text(d) + "` while a job runs)"));
  }
}

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

void judge_usage(const GpuDevice& d, std::vector<Finding>& out) {
  const GpuHealth& h = d.health;
  const std::string s = subject_of(d), g = gpu_name(d);
  if (h.processes && !h.processes->empty()) {
    std::string list;
    for (const auto& p : *h.processes)
      list += (list.empty() ? "" : ", ") + std::string("pid ") + std::to_string(p.pid) +
              (p.name.empty() ? "" : " (" + p.name + ")") +
              (p.used_memory_bytes ? " " + mib(*p.used_memory_bytes) : "");
    out.push_back(warn("gpu.busy", s,
                       g + ": " + std::to_string(h.processes->size()) +
                           " process(es) already hold the GPU: " + list +
                           "; a job placed here shares its memory and compute",
                       "`nvidia-smi -i " + index_text(d) +
                           "`; end the leftover processes (a previous job's stragglers: Slurm's "
                           "epilog or `kill PID`) before scheduling on this GPU"));
  }
  if (h.compute_mode == nvml::kComputeModeProhibited)
    out.push_back(warn("gpu.compute_prohibited", s,
                       g + ": compute mode is Prohibited: no process can create a CUDA context "
                           "on it",
                       "`nvidia-smi -i " + index_text(d) + " -c DEFAULT`"));
  else if (h.compute_mode == nvml::kComputeModeExclusiveProcess ||
           h.compute_mode == nvml::kComputeModeExclusiveThread)
    out.push_back(info("gpu.compute_exclusive", s,
                       g + ": compute mode is " + compute_mode_name(*h.compute_mode) +
                           ": one process at a time (a scheduler's choice; two ranks on one GPU "
                           "fail to start)"));
  if (h.mig_enabled.value_or(false))
    out.push_back(warn("gpu.mig_enabled", s,
                       g + ": MIG mode is on: CUDA sees MIG instances, not the whole GPU, and "
                           "NCCL cannot use NVLink/P2P between them",
                       "for whole-GPU training: `nvidia-smi -i " + index_text(d) +
                           " -mig 0`, then reset the GPU"));
  if (h.mig_enabled && h.mig_pending_enabled && *h.mig_enabled != *h.mig_pending_enabled)
    out.push_back(info("gpu.mode_change_pending", s,
                       g + ": MIG mode turns " + (*h.mig_pending_enabled ? "on" : "off") +
                           " at the next GPU reset"));
}

// One finding for the node: which calls were not answered, on which GPUs. A fact, not a fault.
void judge_not_supported(const GpuFacts& f, std::vector<Finding>& out) {
  std::map<std::string, std::vector<int>> gpus;  // "call: why" -> GPU indices
  for (const auto& d : f.devices)
    for (const auto& n : d.health.not_supported) {
      std::string why =
          n.code ? (n.code == nvml::kErrorFunctionNotFound ? std::string("Function Not Found")
                    : n.code == nvml::kErrorArgumentVersionMismatch
                        ? std::string("Argument Version Mismatch")
                    : n.code == nvml::kErrorNotSupported ? std::string("Not Supported")
                                                         : "NVML error " + std::to_string(*n.code))
                 : std::string("not in this libnvidia-ml");
      gpus[n.call + " (" + why + (n.note.empty() ? "" : "; " + n.note) + ")"].push_back(d.index);
    }
  if (gpus.empty()) return;
  std::string list;
  for (const auto& [what, idx] : gpus) {
    std::string on;
    for (int i : idx) on += (on.empty() ? "" : ",") + std::to_string(i);
    list += (list.empty() ? "" : "; ") + what + " on GPU " + on;
  }
  out.push_back(info("gpu.not_supported", "NVML",
                     "not supported by this driver or GPU, so not judged: " + list));
}

}  // namespace

std::vector<Finding> judge_gpu_health(const GpuFacts& f) {
  std::vector<Finding> out;
  for (const auto& d : f.devices) {
    judge_lost(d, out);
    judge_memory(d, out);
    gpu_detail::judge_memory_counts(d, out);
    judge_clocks_and_heat(d, out);
    judge_pcie(d, out);
    judge_usage(d, out);
  }
  gpu_detail::judge_links(f, out);
  judge_not_supported(f, out);
  return out;
}

}  // namespace fabkit::probes
