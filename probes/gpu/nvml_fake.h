// An NVML table for tests, driven by a JSON fixture: the same
// gather code runs against it as against libnvidia-ml. Its entry points read process-wide state,
// because NVML's API is plain C functions: one fake library at a time, from one thread.
//
// Fixture: {"load_error": "..."} for a library that did not load, else
//   {"init": NVML code (0), "driver_version": "580.95.05", "cuda_driver_version": 13000,
//    "count_error": code, "numa_entry_point": true,
//    "devices": [{"name", "uuid", "bus_id": "00000000:18:00.0", "numa_node": 0 | null,
//                 "memory_total": bytes, "compute_capability": "9.0",
//                 "errors": {"nvmlDeviceGetName": 15, ...}}]}
// An "errors" entry makes that call return the code for that GPU; a null numa_node makes
// nvmlDeviceGetNumaNodeId answer Not Supported, as it does where the driver cannot tell.
#pragma once

#include "common/json.h"
#include "probes/gpu/nvml_api.h"

namespace fabkit::probes::nvml {

// Throws std::invalid_argument naming the field when the fixture is malformed. A fixture with
// "load_error" gives a library that did not load (loaded=false, error = that text).
Library fake_library(const Json& fixture);

struct FakeCalls {
  int init = 0;
  int shutdown = 0;
};
// Calls made through the fake installed last (init/shutdown balance: the probe must shut down).
FakeCalls fake_calls();

}  // namespace fabkit::probes::nvml
