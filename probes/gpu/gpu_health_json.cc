// The health members of each GPU in the `gpus` section (docs/json/gpus.md), and the names of
// NVML's enumerations as the JSON and the findings spell them.
#include "probes/gpu/gpu_health_facts.h"

#include "probes/gpu/nvml_types.h"

namespace fabkit::probes {
namespace {

template <typename T>
Json opt(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json counts(const EccCounts& c) {
  return {{"corrected", opt(c.corrected)}, {"uncorrected", opt(c.uncorrected)}};
}

Json location(const std::optional<EccLocationCounts>& l) {
  if (!l) return nullptr;
  return {{"volatile", counts(l->volatile_counts)}, {"aggregate", counts(l->aggregate_counts)}};
}

}  // namespace

std::vector<std::string> clock_event_reason_names(uint64_t mask) {
  // nvml.h's nvmlClocksEventReason* bits, named as the reasons are in `nvidia-smi -q`.
  static const std::pair<uint64_t, const char*> kNames[] = {
      {nvml::kClocksGpuIdle, "gpu_idle"},
      {nvml::kClocksApplicationsClocksSetting, "applications_clocks_setting"},
      {nvml::kClocksSwPowerCap, "sw_power_cap"},
      {nvml::kClocksHwSlowdown, "hw_slowdown"},
      {nvml::kClocksSyncBoost, "sync_boost"},
      {nvml::kClocksSwThermalSlowdown, "sw_thermal_slowdown"},
      {nvml::kClocksHwThermalSlowdown, "hw_thermal_slowdown"},
      {nvml::kClocksHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
      {nvml::kClocksDisplayClockSetting, "display_clocks_setting"},
  };
  std::vector<std::string> out;
  uint64_t known = 0;
  for (const auto& [bit, name] : kNames) {
    known |= bit;
    if (mask & bit) out.push_back(name);
  }
  if (mask & ~known) out.push_back("unknown_bits");
  return out;
}

std::string compute_mode_name(int mode) {
  switch (mode) {
    case nvml::kComputeModeDefault:
      return "default";
    case nvml::kComputeModeExclusiveThread:
      return "exclusive_thread";
    case nvml::kComputeModeProhibited:
      return "prohibited";
    case nvml::kComputeModeExclusiveProcess:
      return "exclusive_process";
    default:
      return "unknown (" + std::to_string(mode) + ")";
  }
}

std::string fabric_state_name(int state) {
  switch (state) {
    case nvml::kFabricStateNotSupported:
      return "not_supported";
    case nvml::kFabricStateNotStarted:
      return "not_started";
    case nvml::kFabricStateInProgress:
      return "in_progress";
    case nvml::kFabricStateCompleted:
      return "completed";
    default:
      return "unknown (" + std::to_string(state) + ")";
  }
}

std::string fabric_health_name(int summary) {
  switch (summary) {
    case nvml::kFabricHealthNotSupported:
      return "not_supported";
    case nvml::kFabricHealthHealthy:
      return "healthy";
    case nvml::kFabricHealthUnhealthy:
      return "unhealthy";
    case nvml::kFabricHealthLimitedCapacity:
      return "limited_capacity";
    default:
      return "unknown (" + std::to_string(summary) + ")";
  }
}

Json to_json(const GpuHealth& h) {
  Json remap = nullptr;
  if (h.remapped_rows)
    remap = {{"corrected", h.remapped_rows->corrected},
             {"uncorrected", h.remapped_rows->uncorrected},
             {"pending", h.remapped_rows->pending},
             {"failure", h.remapped_rows->failure}};
  Json clocks = nullptr;
  if (h.clocks)
    clocks = {{"mask", h.clocks->mask},
              {"reasons", clock_event_reason_names(h.clocks->mask)},
              {"call", h.clocks->call}};
  Json links = nullptr;
  if (h.nvlinks) {
    links = Json::array();
    for (const auto& l : *h.nvlinks)
      links.push_back({{"link", l.link},
                       {"active", l.active},
                       {"replay", opt(l.replay)},
                       {"recovery", opt(l.recovery)},
                       {"crc_flit", opt(l.crc_flit)},
                       {"crc_data", opt(l.crc_data)}});
  }
  Json fabric = nullptr;
  if (h.fabric) {
    const FabricFacts& f = *h.fabric;
    fabric = {{"call", f.call},
              {"struct_version", f.struct_version},
              {"state", fabric_state_name(f.state)},
              {"status", f.status},
              {"status_text", f.status_text},
              {"clique_id", f.clique_id},
              {"cluster_uuid", f.cluster_uuid},
              {"health_mask", opt(f.health_mask)},
              {"health_summary",
               f.health_summary ? Json(fabric_health_name(*f.health_summary)) : Json()}};
  }
  Json procs = nullptr;
  if (h.processes) {
    procs = Json::array();
    for (const auto& p : *h.processes)
      procs.push_back({{"pid", p.pid},
                       {"used_memory_bytes", opt(p.used_memory_bytes)},
                       {"name", p.name.empty() ? Json() : Json(p.name)}});
  }
  Json unsupported = Json::array();
  for (const auto& n : h.not_supported)
    unsupported.push_back({{"call", n.call},
                           {"code", opt(n.code)},
                           {"note", n.note.empty() ? Json() : Json(n.note)}});
  return {{"vbios_version", opt(h.vbios_version)},
          {"inforom_image_version", opt(h.inforom_image_version)},
          {"serial", opt(h.serial)},
          {"board_part_number", opt(h.board_part_number)},
          {"ecc",
           {{"enabled", opt(h.ecc.enabled)},
            {"pending_enabled", opt(h.ecc.pending_enabled)},
            {"volatile", counts(h.ecc.volatile_counts)},
            {"aggregate", counts(h.ecc.aggregate_counts)},
            {"sram", location(h.ecc.sram)},
            {"dram", location(h.ecc.dram)}}},
          {"retired_pages",
           {{"pending", opt(h.retired_pages.pending)},
            {"multiple_single_bit", opt(h.retired_pages.multiple_single_bit)},
            {"double_bit", opt(h.retired_pages.double_bit)}}},
          {"remapped_rows", remap},
          {"clocks_event_reasons", clocks},
          {"temperature_c", opt(h.thermal.temperature_c)},
          {"slowdown_temperature_c", opt(h.thermal.slowdown_c)},
          {"shutdown_temperature_c", opt(h.thermal.shutdown_c)},
          {"persistence_mode", opt(h.persistence_mode)},
          {"pcie",
           {{"current_generation", opt(h.pcie_current.generation)},
            {"current_width", opt(h.pcie_current.width)},
            {"max_generation", opt(h.pcie_max.generation)},
            {"max_width", opt(h.pcie_max.width)}}},
          {"nvlinks", links},
          {"fabric", fabric},
          {"processes", procs},
          {"mig_enabled", opt(h.mig_enabled)},
          {"mig_pending_enabled", opt(h.mig_pending_enabled)},
          {"compute_mode", h.compute_mode ? Json(compute_mode_name(*h.compute_mode)) : Json()},
          {"not_supported", unsupported}};
}

}  // namespace fabkit::probes
