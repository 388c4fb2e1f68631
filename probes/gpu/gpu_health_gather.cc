// The health queries of one GPU: ECC, retired pages, remapped rows, clock event reasons,
// temperature, persistence, PCIe link, processes, MIG and compute mode, firmware identity. The
// NVLink and fabric queries are in gpu_link_gather.cc. Each call's outcome goes through CallLog,
// so an unsupported call is a recorded fact and a lost GPU stops the queries.
#include "common/file_reader.h"
#include "probes/gpu/nvml_call.h"

namespace fabkit::probes {
namespace gpu_detail {

std::string named(const nvml::Table& t, const char* call, nvml::Return r) {
  return std::string(call) + ": " + nvml::describe(t, r);
}

void CallLog::not_supported(const char* call, std::optional<int> code, const std::string& note) {
  for (const auto& n : d_.health.not_supported)
    if (n.call == call) return;  // once per GPU (the NVLink counters are asked per link)
  d_.health.not_supported.push_back({call, code, note});
}

bool CallLog::present(const char* call, const void* fn, const std::string& note) {
  if (fn) return true;
  not_supported(call, std::nullopt, note);
  return false;
}

bool CallLog::ok(const char* call, nvml::Return r, const std::string& note) {
  if (r == nvml::kSuccess) return true;
  if (unsupported_code(r)) {
    not_supported(call, r, note);
    return false;
  }
  if (!d_.error_codes.count(call)) {
    d_.errors.push_back(named(t_, call, r));
    d_.error_codes[call] = r;
  }
  if (r == nvml::kErrorGpuIsLost) lost_ = true;
  return false;
}

}  // namespace gpu_detail

namespace {

using gpu_detail::CallLog;

std::optional<bool> enabled(nvml::EnableState s) { return s == nvml::kFeatureEnabled; }

void gather_ecc(CallLog& log, nvml::Device h, EccFacts& ecc) {
  const nvml::Table& t = log.table();
  if (log.present("nvmlDeviceGetEccMode", reinterpret_cast<const void*>(t.ecc_mode))) {
    nvml::EnableState current = 0, pending = 0;
    if (log.ok("nvmlDeviceGetEccMode", t.ecc_mode(h, &current, &pending))) {
      ecc.enabled = enabled(current);
      ecc.pending_enabled = enabled(pending);
    }
  }
  // Counts exist only while ECC is on (nvml.h: "Requires ECC Mode to be enabled").
  if (log.lost() || !ecc.enabled.value_or(false) ||
      !log.present("nvmlDeviceGetTotalEccErrors",
                   reinterpret_cast<const void*>(t.total_ecc_errors)))
    return;
  struct Ask {
    int type, counter;
    std::optional<uint64_t>* out;
  } asks[] = {
      {nvml::kMemoryErrorCorrected, nvml::kVolatileEcc, &ecc.volatile_counts.corrected},
      {nvml::kMemoryErrorUncorrected, nvml::kVolatileEcc, &ecc.volatile_counts.uncorrected},
      {nvml::kMemoryErrorCorrected, nvml::kAggregateEcc, &ecc.aggregate_counts.corrected},
      {nvml::kMemoryErrorUncorrected, nvml::kAggregateEcc, &ecc.aggregate_counts.uncorrected}};
  for (const auto& a : asks) {
    unsigned long long n = 0;
    if (log.lost()) return;
    if (log.ok("nvmlDeviceGetTotalEccErrors", t.total_ecc_errors(h, a.type, a.counter, &n)))
      *a.out = n;
  }
}

// SRAM and DRAM apart: the peers' thresholds differ by location (gpu_memory_counts_judge.cc).
// A location the GPU does not answer for stays null: its first Not Supported ends the asks for
// that location (before Turing there is no SRAM location; DRAM is the older DEVICE_MEMORY).
void gather_ecc_locations(CallLog& log, nvml::Device h, EccFacts& ecc) {
  const nvml::Table& t = log.table();
  const char* kCall = "nvmlDeviceGetMemoryErrorCounter";
  if (log.lost() || !ecc.enabled.value_or(false) ||
      !log.present(kCall, reinterpret_cast<const void*>(t.memory_error_counter)))
    return;
  for (auto [location, out] : {std::pair{nvml::kMemoryLocationSram, &ecc.sram},
                               std::pair{nvml::kMemoryLocationDram, &ecc.dram}}) {
    EccLocationCounts c;
    struct Ask {
      int type, counter;
      std::optional<uint64_t>* out;
    } asks[] = {
        {nvml::kMemoryErrorCorrected, nvml::kVolatileEcc, &c.volatile_counts.corrected},
        {nvml::kMemoryErrorUncorrected, nvml::kVolatileEcc, &c.volatile_counts.uncorrected},
        {nvml::kMemoryErrorCorrected, nvml::kAggregateEcc, &c.aggregate_counts.corrected},
        {nvml::kMemoryErrorUncorrected, nvml::kAggregateEcc, &c.aggregate_counts.uncorrected}};
    bool any = false;
    for (const auto& a : asks) {
      unsigned long long n = 0;
      nvml::Return r = t.memory_error_counter(h, a.type, a.counter, location, &n);
      if (!log.ok(kCall, r)) {
        if (log.lost()) return;
        if (gpu_detail::unsupported_code(r)) break;
        continue;
      }
      *a.out = n;
      any = true;
    }
    if (any) *out = c;
  }
}

void gather_retired_pages(CallLog& log, nvml::Device h, RetiredPagesFacts& rp) {
  const nvml::Table& t = log.table();
  if (log.present("nvmlDeviceGetRetiredPagesPendingStatus",
                  reinterpret_cast<const void*>(t.retired_pages_pending))) {
    nvml::EnableState pending = 0;
    if (log.ok("nvmlDeviceGetRetiredPagesPendingStatus", t.retired_pages_pending(h, &pending)))
      rp.pending = enabled(pending);
  }
  // Ampere and later remap rows instead and answer Not Supported: ask for counts only where the
  // pending status was answered.
  if (log.lost() || !rp.pending ||
      !log.present("nvmlDeviceGetRetiredPages", reinterpret_cast<const void*>(t.retired_pages)))
    return;
  for (auto [cause, out] : {std::pair{nvml::kRetirementMultipleSingleBit, &rp.multiple_single_bit},
                            std::pair{nvml::kRetirementDoubleBit, &rp.double_bit}}) {
    // A count of 0 asks for the size: NVML sets it and answers Success, or Insufficient Size when
    // there are pages (a non-null buffer, since some drivers check the pointer first).
    unsigned count = 0;
    unsigned long long unused[1];
    nvml::Return r = t.retired_pages(h, cause, &count, unused);
    if (r == nvml::kErrorInsufficientSize) r = nvml::kSuccess;
    if (log.ok("nvmlDeviceGetRetiredPages", r)) *out = count;
    if (log.lost()) return;
  }
}

void gather_remapped_rows(CallLog& log, nvml::Device h, GpuHealth& health) {
  const nvml::Table& t = log.table();
  if (!log.present("nvmlDeviceGetRemappedRows", reinterpret_cast<const void*>(t.remapped_rows)))
    return;
  unsigned corrected = 0, uncorrected = 0, pending = 0, failure = 0;
  // Not Supported before Ampere, and on MIG-enabled GPUs with active instances (nvml.h).
  if (log.ok("nvmlDeviceGetRemappedRows",
             t.remapped_rows(h, &corrected, &uncorrected, &pending, &failure)))
    health.remapped_rows = RemappedRowsFacts{corrected, uncorrected, pending != 0, failure != 0};
}

void gather_clocks(CallLog& log, nvml::Device h, GpuHealth& health) {
  const nvml::Table& t = log.table();
  const char* kNew = "nvmlDeviceGetCurrentClocksEventReasons";
  const char* kOld = "nvmlDeviceGetCurrentClocksThrottleReasons";  // the name before R535
  const std::string used_old = std::string("used ") + kOld;
  unsigned long long mask = 0;
  if (t.clocks_event_reasons) {
    nvml::Return r = t.clocks_event_reasons(h, &mask);
    if (r == nvml::kSuccess) {
      health.clocks = ClocksFacts{mask, kNew};
      return;
    }
    if (!gpu_detail::try_older_form(r) || !t.clocks_throttle_reasons) {
      log.ok(kNew, r);
      return;
    }
    log.not_supported(kNew, r, used_old);
  } else if (t.clocks_throttle_reasons) {
    log.not_supported(kNew, std::nullopt, used_old);
  } else {
    log.not_supported(kNew, std::nullopt);
    log.not_supported(kOld, std::nullopt);
    return;
  }
  if (log.ok(kOld, t.clocks_throttle_reasons(h, &mask))) health.clocks = ClocksFacts{mask, kOld};
}

void gather_thermal(CallLog& log, nvml::Device h, ThermalFacts& th) {
  const nvml::Table& t = log.table();
  const char* kV = "nvmlDeviceGetTemperatureV";  // NVML 12.8; the unversioned call is deprecated
  const char* kOld = "nvmlDeviceGetTemperature";
  const std::string used_old = std::string("used ") + kOld;
  bool ask_old = false;
  if (t.temperature_v) {
    nvml::TemperatureV1 v{nvml::kTemperatureV1, nvml::kTemperatureGpu, 0};
    nvml::Return r = t.temperature_v(h, &v);
    if (r == nvml::kSuccess) {
      th.temperature_c = v.temperature;
    } else if (gpu_detail::try_older_form(r) && t.temperature) {
      log.not_supported(kV, r, used_old);
      ask_old = true;
    } else {
      log.ok(kV, r);
    }
  } else if (t.temperature) {
    log.not_supported(kV, std::nullopt, used_old);
    ask_old = true;
  } else {
    log.not_supported(kV, std::nullopt);
    log.not_supported(kOld, std::nullopt);
  }
  if (ask_old && !log.lost()) {
    unsigned c = 0;
    if (log.ok(kOld, t.temperature(h, nvml::kTemperatureGpu, &c))) th.temperature_c = int(c);
  }
  if (log.lost() || !log.present("nvmlDeviceGetTemperatureThreshold",
                                 reinterpret_cast<const void*>(t.temperature_threshold)))
    return;
  for (auto [which, out] : {std::pair{nvml::kTemperatureThresholdSlowdown, &th.slowdown_c},
                            std::pair{nvml::kTemperatureThresholdShutdown, &th.shutdown_c}}) {
    unsigned c = 0;
    if (log.ok("nvmlDeviceGetTemperatureThreshold", t.temperature_threshold(h, which, &c)))
      *out = int(c);
    if (log.lost()) return;
  }
}

// One unsigned-valued call; nullopt when absent, unsupported or failed.
std::optional<unsigned> ask(CallLog& log, const char* call,
                            nvml::Return (*fn)(nvml::Device, unsigned*), nvml::Device h) {
  if (log.lost() || !log.present(call, reinterpret_cast<const void*>(fn))) return std::nullopt;
  unsigned v = 0;
  if (!log.ok(call, fn(h, &v))) return std::nullopt;
  return v;
}

std::optional<bool> ask_enable(CallLog& log, const char* call,
                               nvml::Return (*fn)(nvml::Device, nvml::EnableState*),
                               nvml::Device h) {
  if (log.lost() || !log.present(call, reinterpret_cast<const void*>(fn))) return std::nullopt;
  nvml::EnableState v = 0;
  if (!log.ok(call, fn(h, &v))) return std::nullopt;
  return enabled(v);
}

std::optional<std::string> ask_text(CallLog& log, const char* call,
                                    nvml::Return (*fn)(nvml::Device, char*, unsigned),
                                    unsigned size, nvml::Device h) {
  if (log.lost() || !log.present(call, reinterpret_cast<const void*>(fn))) return std::nullopt;
  char buf[96] = {};  // the largest of the NVML_DEVICE_*_BUFFER_SIZE constants used here (80)
  if (!log.ok(call, fn(h, buf, size))) return std::nullopt;
  buf[sizeof buf - 1] = '\0';
  return std::string(buf);
}

void gather_pcie(CallLog& log, nvml::Device h, GpuHealth& health) {
  const nvml::Table& t = log.table();
  auto as_int = [](std::optional<unsigned> v) {
    return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
  };
  health.pcie_current.generation =
      as_int(ask(log, "nvmlDeviceGetCurrPcieLinkGeneration", t.curr_pcie_generation, h));
  health.pcie_current.width =
      as_int(ask(log, "nvmlDeviceGetCurrPcieLinkWidth", t.curr_pcie_width, h));
  health.pcie_max.generation =
      as_int(ask(log, "nvmlDeviceGetMaxPcieLinkGeneration", t.max_pcie_generation, h));
  health.pcie_max.width = as_int(ask(log, "nvmlDeviceGetMaxPcieLinkWidth", t.max_pcie_width, h));
}

std::string process_name(const ProbeContext& ctx, unsigned pid) {
  return read_line(ctx.roots.proc / std::to_string(pid) / "comm").value_or("");
}

void gather_processes(const ProbeContext& ctx, CallLog& log, nvml::Device h, bool name_them,
                      GpuHealth& health) {
  const nvml::Table& t = log.table();
  const char* call = "nvmlDeviceGetComputeRunningProcesses_v3";
  auto* fn = t.compute_processes_v3;
  if (!fn && t.compute_processes_v2) {  // R470 and older: the same struct under the _v2 name
    log.not_supported(call, std::nullopt, "used nvmlDeviceGetComputeRunningProcesses_v2");
    call = "nvmlDeviceGetComputeRunningProcesses_v2";
    fn = t.compute_processes_v2;
  }
  if (!fn) {
    log.not_supported(call, std::nullopt);
    log.not_supported("nvmlDeviceGetComputeRunningProcesses_v2", std::nullopt);
    return;
  }
  if (log.lost()) return;
  // 64 entries cover any real GPU in one call; Insufficient Size sets the count needed.
  std::vector<nvml::ProcessInfo> infos(64);
  unsigned count = static_cast<unsigned>(infos.size());
  nvml::Return r = fn(h, &count, infos.data());
  if (r == nvml::kErrorInsufficientSize) {
    infos.resize(count + 8);  // processes may start between the two calls
    count = static_cast<unsigned>(infos.size());
    r = fn(h, &count, infos.data());
  }
  if (!log.ok(call, r)) return;
  std::vector<GpuProcess> ps;
  for (unsigned i = 0; i < count && i < infos.size(); ++i) {
    GpuProcess p;
    p.pid = infos[i].pid;
    if (infos[i].used_gpu_memory != nvml::kValueNotAvailable)
      p.used_memory_bytes = infos[i].used_gpu_memory;
    if (name_them) p.name = process_name(ctx, p.pid);
    ps.push_back(std::move(p));
  }
  health.processes = std::move(ps);
}

void gather_modes(CallLog& log, nvml::Device h, GpuHealth& health) {
  const nvml::Table& t = log.table();
  if (!log.lost() &&
      log.present("nvmlDeviceGetMigMode", reinterpret_cast<const void*>(t.mig_mode))) {
    unsigned current = 0, pending = 0;
    if (log.ok("nvmlDeviceGetMigMode", t.mig_mode(h, &current, &pending))) {
      health.mig_enabled = current != 0;  // NVML_DEVICE_MIG_ENABLE = 1
      health.mig_pending_enabled = pending != 0;
    }
  }
  if (!log.lost() &&
      log.present("nvmlDeviceGetComputeMode", reinterpret_cast<const void*>(t.compute_mode))) {
    int mode = 0;
    if (log.ok("nvmlDeviceGetComputeMode", t.compute_mode(h, &mode))) health.compute_mode = mode;
  }
}

}  // namespace

void gather_gpu_health(const ProbeContext& ctx, const nvml::Table& t, nvml::Device h,
                       bool name_processes, GpuDevice& d) {
  CallLog log(t, d);
  GpuHealth& health = d.health;
  // Identity first: cluster drift compares it, and it answers even where health calls do not.
  health.vbios_version =
      ask_text(log, "nvmlDeviceGetVbiosVersion", t.vbios_version, nvml::kVbiosVersionBufferSize, h);
  health.inforom_image_version =
      ask_text(log, "nvmlDeviceGetInforomImageVersion", t.inforom_image_version,
               nvml::kInforomVersionBufferSize, h);
  health.serial = ask_text(log, "nvmlDeviceGetSerial", t.serial, nvml::kSerialBufferSize, h);
  health.board_part_number = ask_text(log, "nvmlDeviceGetBoardPartNumber", t.board_part_number,
                                      nvml::kPartNumberBufferSize, h);
  if (!log.lost()) gather_ecc(log, h, health.ecc);
  gather_ecc_locations(log, h, health.ecc);
  if (!log.lost()) gather_retired_pages(log, h, health.retired_pages);
  if (!log.lost()) gather_remapped_rows(log, h, health);
  if (!log.lost()) gather_clocks(log, h, health);
  if (!log.lost()) gather_thermal(log, h, health.thermal);
  health.persistence_mode = ask_enable(log, "nvmlDeviceGetPersistenceMode", t.persistence_mode, h);
  gather_pcie(log, h, health);
  if (!log.lost()) gpu_detail::gather_links(log, h, health);
  if (!log.lost()) gpu_detail::gather_fabric(log, h, health);
  gather_processes(ctx, log, h, name_processes, health);
  gather_modes(log, h, health);
}

}  // namespace fabkit::probes
