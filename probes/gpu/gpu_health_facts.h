// GPU health as NVML reports it, per GPU: ECC, retired pages, remapped rows, clock event
// reasons, temperature, persistence mode, the PCIe link, NVLinks, the NVSwitch fabric, the
// processes holding the GPU, MIG and compute mode, and the firmware identity cluster drift
// compares. Every value is optional: a call the driver or GPU does not support leaves it null and
// adds a NotSupported entry, so "not supported here" is a recorded fact and never a fault.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"
#include "topo/pcie_link.h"

namespace fabkit::probes {

// A call this driver or GPU does not answer: code 3 (Not Supported) or 13 (Function Not Found),
// or no code when the symbol is missing from this libnvidia-ml (an older driver).
struct NotSupported {
  std::string call;
  std::optional<int> code;
  std::string note;  // what the probe used instead ("used nvmlDeviceGetTemperature")
};

struct EccCounts {
  std::optional<uint64_t> corrected, uncorrected;
};
// The counts of one memory location (nvmlDeviceGetMemoryErrorCounter), as nvidia-smi -q's
// "SRAM Correctable", "DRAM Uncorrectable", ... rows print them.
struct EccLocationCounts {
  EccCounts volatile_counts, aggregate_counts;
};
struct EccFacts {
  std::optional<bool> enabled;          // current mode
  std::optional<bool> pending_enabled;  // after the next reset
  EccCounts volatile_counts;            // since the driver loaded
  EccCounts aggregate_counts;           // the life of the board (InfoROM)
  // The totals split by where the error was: DRAM (HBM, contained by row remapping) and SRAM
  // (on-die caches and register files, which nothing remaps). Null where the GPU or driver does
  // not answer for that location (before Turing, or an older libnvidia-ml).
  std::optional<EccLocationCounts> sram, dram;
};

struct RetiredPagesFacts {
  std::optional<bool> pending;  // pages waiting for a reset to retire
  std::optional<uint64_t> multiple_single_bit, double_bit;
};

struct RemappedRowsFacts {
  unsigned corrected = 0, uncorrected = 0;
  bool pending = false, failure = false;
};

struct ClocksFacts {
  uint64_t mask = 0;
  std::string call;  // which of the two names answered
};

struct ThermalFacts {
  std::optional<int> temperature_c, slowdown_c, shutdown_c;
};

struct NvLinkFacts {
  unsigned link = 0;
  bool active = false;
  std::optional<uint64_t> replay, recovery, crc_flit, crc_data;
};

struct FabricFacts {
  std::string call;         // nvmlDeviceGetGpuFabricInfoV or nvmlDeviceGetGpuFabricInfo
  int struct_version = 1;   // 1 (unversioned), 2 or 3
  int state = 0;            // NVML_GPU_FABRIC_STATE_*
  int status = 0;           // an NVML return code, meaningful once state is COMPLETED
  std::string status_text;  // nvmlErrorString(status)
  unsigned clique_id = 0;
  std::string cluster_uuid;             // 8-4-4-4-12 hex
  std::optional<unsigned> health_mask;  // v2 and later
  std::optional<int> health_summary;    // v3: NVML_GPU_FABRIC_HEALTH_SUMMARY_*
};

struct GpuProcess {
  unsigned pid = 0;
  std::optional<uint64_t> used_memory_bytes;
  std::string name;  // /proc/PID/comm through the roots; "" when not visible here
};

struct GpuHealth {
  EccFacts ecc;
  RetiredPagesFacts retired_pages;
  std::optional<RemappedRowsFacts> remapped_rows;
  std::optional<ClocksFacts> clocks;
  ThermalFacts thermal;
  std::optional<bool> persistence_mode;
  topo::PcieLink pcie_current, pcie_max;  // as NVML sees it (max: of the GPU and the slot)
  std::optional<std::vector<NvLinkFacts>> nvlinks;  // null: no NVLink (Not Supported)
  std::optional<FabricFacts> fabric;
  std::optional<std::vector<GpuProcess>> processes;
  std::optional<bool> mig_enabled, mig_pending_enabled;
  std::optional<int> compute_mode;  // nvmlComputeMode_t
  std::optional<std::string> vbios_version, inforom_image_version, serial, board_part_number;
  std::vector<NotSupported> not_supported;
};

// Names of the clock event reason bits set in mask, in bit order ("hw_slowdown", ...).
std::vector<std::string> clock_event_reason_names(uint64_t mask);
// "default", "exclusive_thread", "prohibited", "exclusive_process", or "unknown (N)".
std::string compute_mode_name(int mode);
// "not_supported", "not_started", "in_progress", "completed", or "unknown (N)".
std::string fabric_state_name(int state);
// "not_supported", "healthy", "unhealthy", "limited_capacity", or "unknown (N)".
std::string fabric_health_name(int summary);

Json to_json(const GpuHealth& h);

}  // namespace fabkit::probes
