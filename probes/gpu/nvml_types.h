// The NVML types the GPU probe passes across the seam, mirrored from NVIDIA's public nvml.h
// (not installed here: the CUDA toolkit ships no nvml.h on this machine). Source of every
// layout, value and buffer size below: nvml.h of CUDA 13.3 (NVML API version 13) as published
// in github.com/NVIDIA/go-nvml, gen/nvml/nvml.h at commit 8b8585b; the older limits (12 and 18
// NVLinks) from the same file's history (NVML 11.5, 12.0). Each struct's size is asserted, so a
// layout typed wrong fails to compile instead of reading garbage from the driver.
#pragma once

#include <cstddef>

namespace fabkit::probes::nvml {

using Return = int;  // nvmlReturn_t
constexpr Return kSuccess = 0;
constexpr Return kErrorUninitialized = 1;
constexpr Return kErrorInvalidArgument = 2;
constexpr Return kErrorNotSupported = 3;
constexpr Return kErrorNoPermission = 4;
constexpr Return kErrorNotFound = 6;
constexpr Return kErrorInsufficientSize = 7;
constexpr Return kErrorDriverNotLoaded = 9;
constexpr Return kErrorFunctionNotFound = 13;  // "Local version of NVML doesn't implement this"
constexpr Return kErrorCorruptedInforom = 14;
constexpr Return kErrorGpuIsLost = 15;  // fell off the bus (Xid 79)
constexpr Return kErrorResetRequired = 16;
constexpr Return kErrorLibRmVersionMismatch = 18;
constexpr Return kErrorArgumentVersionMismatch = 25;  // a versioned struct the driver predates
constexpr Return kErrorUnknown = 999;

struct DeviceSt;
using Device = DeviceSt*;  // nvmlDevice_t

// nvmlEnableState_t (NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1): an enum, int-sized.
using EnableState = int;
constexpr EnableState kFeatureDisabled = 0;
constexpr EnableState kFeatureEnabled = 1;

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
static_assert(sizeof(Memory) == 24, "nvmlMemory_t layout");

// nvmlMemoryErrorType_t and nvmlEccCounterType_t, the arguments of nvmlDeviceGetTotalEccErrors.
constexpr int kMemoryErrorCorrected = 0;    // NVML_MEMORY_ERROR_TYPE_CORRECTED
constexpr int kMemoryErrorUncorrected = 1;  // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr int kVolatileEcc = 0;             // NVML_VOLATILE_ECC: reset when the driver loads
constexpr int kAggregateEcc = 1;            // NVML_AGGREGATE_ECC: the life of the board (InfoROM)

// nvmlMemoryLocation_t, the last argument of nvmlDeviceGetMemoryErrorCounter: where nvidia-smi's
// "DRAM" and "SRAM" ECC rows come from (Turing and later; DRAM shares its value with
// NVML_MEMORY_LOCATION_DEVICE_MEMORY, the older name).
constexpr int kMemoryLocationDram = 2;  // NVML_MEMORY_LOCATION_DRAM: HBM/GDDR, row-remapped
constexpr int kMemoryLocationSram = 7;  // NVML_MEMORY_LOCATION_SRAM: on-die L2, register file, ...

// nvmlPageRetirementCause_t
constexpr int kRetirementMultipleSingleBit = 0;  // ..._MULTIPLE_SINGLE_BIT_ECC_ERRORS
constexpr int kRetirementDoubleBit = 1;          // ..._DOUBLE_BIT_ECC_ERROR

// Clock event reasons (nvml.h's nvmlClocksEventReason*, formerly nvmlClocksThrottleReason*):
// the bits of nvmlDeviceGetCurrentClocksEventReasons.
constexpr unsigned long long kClocksGpuIdle = 0x1;
constexpr unsigned long long kClocksApplicationsClocksSetting = 0x2;
constexpr unsigned long long kClocksSwPowerCap = 0x4;
constexpr unsigned long long kClocksHwSlowdown = 0x8;
constexpr unsigned long long kClocksSyncBoost = 0x10;
constexpr unsigned long long kClocksSwThermalSlowdown = 0x20;
constexpr unsigned long long kClocksHwThermalSlowdown = 0x40;
constexpr unsigned long long kClocksHwPowerBrakeSlowdown = 0x80;
constexpr unsigned long long kClocksDisplayClockSetting = 0x100;

// nvmlTemperatureSensors_t and nvmlTemperatureThresholds_t
constexpr int kTemperatureGpu = 0;                // NVML_TEMPERATURE_GPU
constexpr int kTemperatureThresholdShutdown = 0;  // NVML_TEMPERATURE_THRESHOLD_SHUTDOWN
constexpr int kTemperatureThresholdSlowdown = 1;  // NVML_TEMPERATURE_THRESHOLD_SLOWDOWN

struct TemperatureV1 {  // nvmlTemperature_v1_t (nvmlDeviceGetTemperatureV, NVML 12.8)
  unsigned int version;
  int sensor_type;  // nvmlTemperatureSensors_t
  int temperature;  // degrees C
};
static_assert(sizeof(TemperatureV1) == 12, "nvmlTemperature_v1_t layout");

// NVML_NVLINK_MAX_LINKS: 12 in NVML 11.x, 18 in 12.x, 36 in 13.x. The probe asks for every link
// up to the newest maximum; a driver that knows fewer answers Invalid Argument past its own.
constexpr unsigned kNvLinkMaxLinks = 36;
// nvmlNvLinkErrorCounter_t
constexpr int kNvLinkErrorDlReplay = 0;    // NVML_NVLINK_ERROR_DL_REPLAY: transmit replays
constexpr int kNvLinkErrorDlRecovery = 1;  // NVML_NVLINK_ERROR_DL_RECOVERY: link retrains
constexpr int kNvLinkErrorDlCrcFlit = 2;   // NVML_NVLINK_ERROR_DL_CRC_FLIT: flow-control CRC
constexpr int kNvLinkErrorDlCrcData = 3;   // NVML_NVLINK_ERROR_DL_CRC_DATA: data CRC

// The GPU fabric (NVSwitch systems): NVML_GPU_FABRIC_STATE_* and the probe's structs.
constexpr unsigned char kFabricStateNotSupported = 0;
constexpr unsigned char kFabricStateNotStarted = 1;
constexpr unsigned char kFabricStateInProgress = 2;
constexpr unsigned char kFabricStateCompleted = 3;
constexpr unsigned kFabricUuidLen = 16;  // NVML_GPU_FABRIC_UUID_LEN
// NVML_GPU_FABRIC_HEALTH_SUMMARY_*
constexpr unsigned char kFabricHealthNotSupported = 0;
constexpr unsigned char kFabricHealthHealthy = 1;
constexpr unsigned char kFabricHealthUnhealthy = 2;
constexpr unsigned char kFabricHealthLimitedCapacity = 3;
// NVML_GPU_FABRIC_HEALTH_MASK_*_DEGRADED_BW: bits 0-1 of healthMask; 1 = bandwidth degraded.
// (nvml.h of NVML 12.4-12.6 defines the width as 0x11, 12.8 and later 0x3: the field is 2 bits.)
constexpr unsigned kFabricHealthMaskDegradedBwShift = 0;
constexpr unsigned kFabricHealthMaskDegradedBwWidth = 0x3;
constexpr unsigned kFabricHealthMaskDegradedBwTrue = 1;

struct GpuFabricInfo {  // nvmlGpuFabricInfo_t (nvmlDeviceGetGpuFabricInfo, since NVML 12.0)
  unsigned char cluster_uuid[kFabricUuidLen];
  Return status;  // meaningful once state is COMPLETED
  unsigned int clique_id;
  unsigned char state;  // nvmlGpuFabricState_t
};
static_assert(sizeof(GpuFabricInfo) == 28, "nvmlGpuFabricInfo_t layout");

struct GpuFabricInfoV2 {  // nvmlGpuFabricInfo_v2_t (nvmlDeviceGetGpuFabricInfoV, NVML 12.4)
  unsigned int version;
  unsigned char cluster_uuid[kFabricUuidLen];
  Return status;
  unsigned int clique_id;
  unsigned char state;
  unsigned int health_mask;
};
static_assert(sizeof(GpuFabricInfoV2) == 36, "nvmlGpuFabricInfo_v2_t layout");

struct GpuFabricInfoV3 {  // nvmlGpuFabricInfo_v3_t = nvmlGpuFabricInfoV_t (NVML 13.0)
  unsigned int version;
  unsigned char cluster_uuid[kFabricUuidLen];
  Return status;
  unsigned int clique_id;
  unsigned char state;
  unsigned int health_mask;
  unsigned char health_summary;  // NVML_GPU_FABRIC_HEALTH_SUMMARY_*
};
static_assert(sizeof(GpuFabricInfoV3) == 40, "nvmlGpuFabricInfo_v3_t layout");
static_assert(offsetof(GpuFabricInfoV3, health_mask) == offsetof(GpuFabricInfoV2, health_mask),
              "v3 extends v2");

// NVML_STRUCT_VERSION(data, ver): sizeof(nvml<data>_v<ver>_t) | ver << 24, as nvml.h computes the
// nvmlTemperature_v1, nvmlGpuFabricInfo_v2 and nvmlGpuFabricInfo_v3 macros.
template <typename Struct>
constexpr unsigned int struct_version(unsigned int ver) {
  return static_cast<unsigned int>(sizeof(Struct)) | (ver << 24U);
}
constexpr unsigned int kTemperatureV1 = struct_version<TemperatureV1>(1);
constexpr unsigned int kGpuFabricInfoV2 = struct_version<GpuFabricInfoV2>(2);
constexpr unsigned int kGpuFabricInfoV3 = struct_version<GpuFabricInfoV3>(3);
static_assert(kGpuFabricInfoV3 == 0x03000028u, "sizeof 40 | 3 << 24");

struct ProcessInfo {  // nvmlProcessInfo_t (= nvmlProcessInfo_v2_t) of ..._v2 and ..._v3
  unsigned int pid;
  unsigned long long used_gpu_memory;  // bytes; NVML_VALUE_NOT_AVAILABLE (all ones) when unknown
  unsigned int gpu_instance_id;        // 0xFFFFFFFF unless MIG
  unsigned int compute_instance_id;
};
static_assert(sizeof(ProcessInfo) == 24, "nvmlProcessInfo_t layout");
constexpr unsigned long long kValueNotAvailable =
    ~0ull;  // (unsigned long long)NVML_VALUE_NOT_AVAILABLE

// nvmlComputeMode_t
constexpr int kComputeModeDefault = 0;
constexpr int kComputeModeExclusiveThread = 1;  // "Support Removed"
constexpr int kComputeModeProhibited = 2;
constexpr int kComputeModeExclusiveProcess = 3;

// Buffer sizes nvml.h guarantees to be large enough.
constexpr unsigned kNameBufferSize = 96;            // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned kUuidBufferSize = 96;            // NVML_DEVICE_UUID_V2_BUFFER_SIZE
constexpr unsigned kDriverVersionBufferSize = 80;   // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
constexpr unsigned kVbiosVersionBufferSize = 32;    // NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE
constexpr unsigned kInforomVersionBufferSize = 16;  // NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE
constexpr unsigned kSerialBufferSize = 30;          // NVML_DEVICE_SERIAL_BUFFER_SIZE
constexpr unsigned kPartNumberBufferSize = 80;      // NVML_DEVICE_PART_NUMBER_BUFFER_SIZE

}  // namespace fabkit::probes::nvml
