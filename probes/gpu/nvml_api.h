// The NVML seam: the NVML entry points the GPU probe uses, as a table of C function
// pointers. The real table comes from dlopen("libnvidia-ml.so.1") at run time (nvml_loader.cc),
// so fabcheck links no NVIDIA library and still starts where no driver exists; tests fill the same
// table from a fixture (nvml_fake.h). NVML answers from the driver without creating a CUDA
// context: `nvidia-smi -L` (NVML) takes ~21 ms on an H100 node where cuInit alone takes ~200 ms.
//
// The types mirror nvml.h (nvml_types.h says from where); the layouts are those of the versioned
// entry points named beside each pointer. The health entry points are optional: a driver older
// than the call lacks its symbol, and the loader leaves that pointer null (recorded in
// Library::missing), which the probe reports as "not supported here", never as a fault.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "probes/gpu/nvml_types.h"

namespace fabkit::probes::nvml {

struct Table {
  Return (*init)() = nullptr;                            // nvmlInit_v2
  Return (*shutdown)() = nullptr;                        // nvmlShutdown
  const char* (*error_string)(Return) = nullptr;         // nvmlErrorString
  Return (*driver_version)(char*, unsigned) = nullptr;   // nvmlSystemGetDriverVersion
  Return (*cuda_driver_version)(int*) = nullptr;         // nvmlSystemGetCudaDriverVersion_v2
  Return (*device_count)(unsigned*) = nullptr;           // nvmlDeviceGetCount_v2
  Return (*device_handle)(unsigned, Device*) = nullptr;  // nvmlDeviceGetHandleByIndex_v2
  Return (*device_name)(Device, char*, unsigned) = nullptr;             // nvmlDeviceGetName
  Return (*device_uuid)(Device, char*, unsigned) = nullptr;             // nvmlDeviceGetUUID
  Return (*device_pci_info)(Device, PciInfo*) = nullptr;                // nvmlDeviceGetPciInfo_v3
  Return (*device_memory)(Device, Memory*) = nullptr;                   // nvmlDeviceGetMemoryInfo
  Return (*device_compute_capability)(Device, int*, int*) = nullptr;    // ...GetCudaComputeCapability
  // Optional: drivers before R535 lack it; the probe then reads the PCI device's sysfs numa_node.
  Return (*device_numa_node)(Device, unsigned*) = nullptr;              // nvmlDeviceGetNumaNodeId

  // Health (gpu_health_gather.cc), all optional. ECC mode and counts:
  Return (*ecc_mode)(Device, EnableState*, EnableState*) = nullptr;  // nvmlDeviceGetEccMode
  Return (*total_ecc_errors)(Device, int, int, unsigned long long*) = nullptr;
  // nvmlDeviceGetTotalEccErrors
  // (error type, counter type, nvmlMemoryLocation_t): the DRAM and SRAM parts of that total.
  Return (*memory_error_counter)(Device, int, int, int, unsigned long long*) = nullptr;
  // nvmlDeviceGetMemoryErrorCounter
  // Page retirement (Kepler..Volta; Ampere and later remap rows instead and answer Not Supported).
  Return (*retired_pages)(Device, int, unsigned*, unsigned long long*) = nullptr;
  // nvmlDeviceGetRetiredPages
  Return (*retired_pages_pending)(Device, EnableState*) = nullptr;
  // nvmlDeviceGetRetiredPagesPendingStatus
  // (corrected rows, uncorrected rows, pending, failure occurred); Ampere and later.
  Return (*remapped_rows)(Device, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  // nvmlDeviceGetRemappedRows
  // The current name (R535+) and the older one it replaced; the probe uses the first present.
  Return (*clocks_event_reasons)(Device, unsigned long long*) = nullptr;
  // nvmlDeviceGetCurrentClocksEventReasons
  Return (*clocks_throttle_reasons)(Device, unsigned long long*) = nullptr;
  // nvmlDeviceGetCurrentClocksThrottleReasons
  Return (*temperature_v)(Device, TemperatureV1*) = nullptr;  // nvmlDeviceGetTemperatureV
  Return (*temperature)(Device, int, unsigned*) = nullptr;    // nvmlDeviceGetTemperature
  Return (*temperature_threshold)(Device, int, unsigned*) = nullptr;
  // nvmlDeviceGetTemperatureThreshold
  Return (*persistence_mode)(Device, EnableState*) = nullptr;  // nvmlDeviceGetPersistenceMode
  Return (*curr_pcie_generation)(Device, unsigned*) = nullptr;
  // nvmlDeviceGetCurrPcieLinkGeneration
  Return (*curr_pcie_width)(Device, unsigned*) = nullptr;  // nvmlDeviceGetCurrPcieLinkWidth
  Return (*max_pcie_generation)(Device, unsigned*) = nullptr;
  // nvmlDeviceGetMaxPcieLinkGeneration
  Return (*max_pcie_width)(Device, unsigned*) = nullptr;  // nvmlDeviceGetMaxPcieLinkWidth
  Return (*nvlink_state)(Device, unsigned, EnableState*) = nullptr;  // nvmlDeviceGetNvLinkState
  Return (*nvlink_error_counter)(Device, unsigned, int, unsigned long long*) = nullptr;
  // nvmlDeviceGetNvLinkErrorCounter
  // Versioned (v2/v3 struct, version field set first), then the unversioned R525 form.
  Return (*gpu_fabric_info_v)(Device, GpuFabricInfoV3*) = nullptr;  // nvmlDeviceGetGpuFabricInfoV
  Return (*gpu_fabric_info)(Device, GpuFabricInfo*) = nullptr;      // nvmlDeviceGetGpuFabricInfo
  Return (*compute_processes_v3)(Device, unsigned*, ProcessInfo*) = nullptr;
  // nvmlDeviceGetComputeRunningProcesses_v3
  Return (*compute_processes_v2)(Device, unsigned*, ProcessInfo*) = nullptr;
  // nvmlDeviceGetComputeRunningProcesses_v2
  Return (*mig_mode)(Device, unsigned*, unsigned*) = nullptr;  // nvmlDeviceGetMigMode
  Return (*compute_mode)(Device, int*) = nullptr;              // nvmlDeviceGetComputeMode
  // Identity for drift between nodes.
  Return (*vbios_version)(Device, char*, unsigned) = nullptr;  // nvmlDeviceGetVbiosVersion
  Return (*inforom_image_version)(Device, char*, unsigned) = nullptr;
  // nvmlDeviceGetInforomImageVersion
  Return (*serial)(Device, char*, unsigned) = nullptr;             // nvmlDeviceGetSerial
  Return (*board_part_number)(Device, char*, unsigned) = nullptr;  // nvmlDeviceGetBoardPartNumber
};

// A loaded NVML: the table, or why there is none. Keeps the library open while it lives.
struct Library {
  Table table;
  bool loaded = false;
  std::string error;              // not loaded: dlopen's or dlsym's own message
  std::vector<std::string> missing;  // optional entry points this library lacks, by NVML name
  std::shared_ptr<void> handle;   // dlclose on release; null for the fake
};

// dlopen(soname) and dlsym every required entry point; a missing library or symbol is
// loaded=false with the loader's message, never an exception.
Library load_library(const std::string& soname = "libnvidia-ml.so.1");

// "Driver Not Loaded (NVML error 9)": nvmlErrorString's text with the number, for messages.
std::string describe(const Table& t, Return r);

}  // namespace fabkit::probes::nvml
