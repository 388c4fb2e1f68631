// An NVML table driven by a JSON fixture: the same gather code runs against it as against
// libnvidia-ml. Tests use it, and `fabcheck node --nvml-replay FILE` replays a fixture recorded on
// a GPU node with `--nvml-record FILE`. Its entry points read process-wide state, because NVML's
// API is plain C functions: one fake library at a time, from one thread.
//
// Fixture: {"load_error": "..."} for a library that did not load, else
//   {"init": NVML code (0), "driver_version": "580.95.05", "cuda_driver_version": 13000,
//    "count_error": code, "numa_entry_point": true,
//    "missing_entry_points": ["nvmlDeviceGetCurrentClocksEventReasons", ...],
//    "devices": [DEVICE, ...]}
// "missing_entry_points" names optional symbols this library lacks (an older driver); the
// loader's list of them is nvml_loader.cc. DEVICE:
//   {"name", "uuid", "bus_id": "00000000:18:00.0", "numa_node": 0 | null,
//    "memory_total": bytes, "compute_capability": "9.0",
//    "errors": {"nvmlDeviceGetName": 15, "*": 15, ...},
//    "vbios_version", "inforom_image_version", "serial", "board_part_number": strings,
//    "ecc_mode": {"current": bool, "pending": bool},
//    "ecc_errors": {"volatile": {"corrected": n, "uncorrected": n}, "aggregate": {...}},
//    "ecc_location_errors": {"sram": {"volatile": {...}, "aggregate": {...}}, "dram": {...}},
//    "retired_pages": {"pending": bool, "multiple_single_bit": n, "double_bit": n},
//    "remapped_rows": {"corrected": n, "uncorrected": n, "pending": bool, "failure": bool},
//    "clocks_event_reasons": bitmask (nvmlClocksEventReason*),
//    "temperature_c": n, "temperature_thresholds_c": {"slowdown": n, "shutdown": n},
//    "persistence_mode": bool,
//    "pcie": {"current_generation", "current_width", "max_generation", "max_width"},
//    "nvlinks": [{"active": bool, "replay": n, "recovery": n, "crc_flit": n, "crc_data": n}
//                | null, ...],
//    "fabric": {"state": n, "status": code, "clique_id": n, "cluster_uuid": "8-4-4-4-12 hex",
//               "health_mask": n, "health_summary": n, "max_version": 1 | 2 | 3},
//    "processes": [{"pid": n, "used_memory": bytes | null}],
//    "mig_mode": {"current": bool, "pending": bool}, "compute_mode": n}
// Every health member is optional: an absent one makes its call answer Not Supported, as a GPU
// without the feature does. An "errors" entry makes that call return the code for that GPU ("*":
// every call after the inventory, as on a GPU that fell off the bus). "nvlinks": index = link; a
// null entry answers Not Supported, an index past the list Invalid Argument, and without the
// member link 0 answers Not Supported (no NVLink); counters absent from an entry answer Not
// Supported. "fabric.max_version": the newest nvmlGpuFabricInfo version the driver accepts
// (3 default; 2 answers Argument Version Mismatch to v3, 1 to both). A null numa_node makes
// nvmlDeviceGetNumaNodeId answer Not Supported, as it does where the driver cannot tell.
// Unknown members are refused, so a typo in a fixture cannot pass as "not supported".
#pragma once

#include <map>
#include <string>

#include "common/json.h"
#include "probes/gpu/nvml_api.h"

namespace fabkit::probes::nvml {

// Throws std::invalid_argument naming the field when the fixture is malformed. A fixture with
// "load_error" gives a library that did not load (loaded=false, error = that text).
Library fake_library(const Json& fixture);

struct FakeCalls {
  int init = 0;
  int shutdown = 0;
  int total = 0;                       // every entry point, init and shutdown included
  std::map<std::string, int> by_call;  // NVML name -> calls
};
// Calls made through the fake installed last (init/shutdown balance: the probe must shut down;
// the total is the figure the node check's time budget is sized by).
FakeCalls fake_calls();

}  // namespace fabkit::probes::nvml
