// The NVML seam: the dozen NVML entry points the GPU probe uses, as a table of C function
// pointers. The real table comes from dlopen("libnvidia-ml.so.1") at run time (nvml_loader.cc),
// so fabcheck links no NVIDIA library and still starts where no driver exists; tests fill the same
// table from a fixture (nvml_fake.h). NVML answers from the driver without creating a CUDA
// context: `nvidia-smi -L` (NVML) takes ~21 ms on an H100 node where cuInit alone takes ~200 ms.
//
// The types mirror nvml.h (not shipped with the CUDA toolkit here) for the calls used; the
// layouts are those of the versioned entry points named beside each pointer.
#pragma once

#include <memory>
#include <string>

namespace fabkit::probes::nvml {

using Return = int;  // nvmlReturn_t
constexpr Return kSuccess = 0;
constexpr Return kErrorUninitialized = 1;
constexpr Return kErrorInvalidArgument = 2;
constexpr Return kErrorNotSupported = 3;
constexpr Return kErrorNoPermission = 4;
constexpr Return kErrorInsufficientSize = 7;
constexpr Return kErrorDriverNotLoaded = 9;
constexpr Return kErrorGpuIsLost = 15;
constexpr Return kErrorLibRmVersionMismatch = 18;
constexpr Return kErrorUnknown = 999;

struct DeviceSt;
using Device = DeviceSt*;  // nvmlDevice_t

struct PciInfo {  // nvmlPciInfo_t as filled by nvmlDeviceGetPciInfo_v3
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;  // device id << 16 | vendor id
  unsigned int pci_subsystem_id;
  char bus_id[32];  // "00000000:18:00.0"
};
static_assert(sizeof(PciInfo) == 68, "nvmlPciInfo_t layout");

struct Memory {  // nvmlMemory_t (v1)
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// Buffer sizes nvml.h guarantees to be large enough.
constexpr unsigned kNameBufferSize = 96;           // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned kUuidBufferSize = 96;           // NVML_DEVICE_UUID_V2_BUFFER_SIZE
constexpr unsigned kDriverVersionBufferSize = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE

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
};

// A loaded NVML: the table, or why there is none. Keeps the library open while it lives.
struct Library {
  Table table;
  bool loaded = false;
  std::string error;              // not loaded: dlopen's or dlsym's own message
  std::shared_ptr<void> handle;   // dlclose on release; null for the fake
};

// dlopen(soname) and dlsym every required entry point; a missing library or symbol is
// loaded=false with the loader's message, never an exception.
Library load_library(const std::string& soname = "libnvidia-ml.so.1");

// "Driver Not Loaded (NVML error 9)": nvmlErrorString's text with the number, for messages.
std::string describe(const Table& t, Return r);

}  // namespace fabkit::probes::nvml
