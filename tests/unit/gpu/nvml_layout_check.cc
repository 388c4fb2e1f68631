// Compile-time check of probes/gpu/nvml_types.h against NVIDIA's nvml.h where one is installed
// (tests/unit/gpu/CMakeLists.txt builds it only then): sizes, member offsets, version macros and
// enum values of every type the probe passes across the seam. Types newer than the installed
// header are skipped by its own version macros, so an older CUDA's nvml.h checks what it has.
// Run against nvml.h of CUDA 13.3 (NVIDIA/go-nvml gen/nvml/nvml.h) when the types were written.
#include <nvml.h>

#include <cstddef>

#include "probes/gpu/nvml_types.h"

namespace n = fabkit::probes::nvml;

#define FABKIT_SAME_SIZE(ours, theirs) static_assert(sizeof(ours) == sizeof(theirs), #theirs)
#define FABKIT_SAME_OFFSET(ours, om, theirs, tm) \
  static_assert(offsetof(ours, om) == offsetof(theirs, tm), #theirs "." #tm)

FABKIT_SAME_SIZE(n::PciInfo, nvmlPciInfo_t);
FABKIT_SAME_OFFSET(n::PciInfo, bus_id, nvmlPciInfo_t, busId);
FABKIT_SAME_SIZE(n::Memory, nvmlMemory_t);
FABKIT_SAME_SIZE(n::ProcessInfo, nvmlProcessInfo_t);
FABKIT_SAME_OFFSET(n::ProcessInfo, used_gpu_memory, nvmlProcessInfo_t, usedGpuMemory);
FABKIT_SAME_OFFSET(n::ProcessInfo, compute_instance_id, nvmlProcessInfo_t, computeInstanceId);
static_assert(sizeof(nvmlEnableState_t) == sizeof(n::EnableState), "nvmlEnableState_t");

#ifdef nvmlTemperature_v1  // NVML 12.8
FABKIT_SAME_SIZE(n::TemperatureV1, nvmlTemperature_v1_t);
FABKIT_SAME_OFFSET(n::TemperatureV1, temperature, nvmlTemperature_v1_t, temperature);
static_assert(n::kTemperatureV1 == nvmlTemperature_v1, "nvmlTemperature_v1");
#endif
#ifdef NVML_GPU_FABRIC_UUID_LEN  // NVML 12.0
FABKIT_SAME_SIZE(n::GpuFabricInfo, nvmlGpuFabricInfo_t);
FABKIT_SAME_OFFSET(n::GpuFabricInfo, status, nvmlGpuFabricInfo_t, status);
// (clique_id: named partitionId in NVML 12.0's header; the size and the offsets around it fix it.)
FABKIT_SAME_OFFSET(n::GpuFabricInfo, state, nvmlGpuFabricInfo_t, state);
static_assert(n::kFabricUuidLen == NVML_GPU_FABRIC_UUID_LEN, "NVML_GPU_FABRIC_UUID_LEN");
static_assert(n::kFabricStateNotStarted == NVML_GPU_FABRIC_STATE_NOT_STARTED &&
                  n::kFabricStateCompleted == NVML_GPU_FABRIC_STATE_COMPLETED,
              "NVML_GPU_FABRIC_STATE_*");
#endif
#ifdef nvmlGpuFabricInfo_v2  // NVML 12.4
FABKIT_SAME_SIZE(n::GpuFabricInfoV2, nvmlGpuFabricInfo_v2_t);
FABKIT_SAME_OFFSET(n::GpuFabricInfoV2, state, nvmlGpuFabricInfo_v2_t, state);
FABKIT_SAME_OFFSET(n::GpuFabricInfoV2, health_mask, nvmlGpuFabricInfo_v2_t, healthMask);
static_assert(n::kGpuFabricInfoV2 == nvmlGpuFabricInfo_v2, "nvmlGpuFabricInfo_v2");
// Not the width: nvml.h of NVML 12.4-12.6 defines it 0x11, from 12.8 on 0x3 (a 2-bit field).
static_assert(n::kFabricHealthMaskDegradedBwTrue == NVML_GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_TRUE &&
                  n::kFabricHealthMaskDegradedBwShift ==
                      NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_DEGRADED_BW,
              "NVML_GPU_FABRIC_HEALTH_MASK_*_DEGRADED_BW");
#endif
#ifdef nvmlGpuFabricInfo_v3  // NVML 13.0
FABKIT_SAME_SIZE(n::GpuFabricInfoV3, nvmlGpuFabricInfo_v3_t);
FABKIT_SAME_OFFSET(n::GpuFabricInfoV3, health_summary, nvmlGpuFabricInfo_v3_t, healthSummary);
static_assert(n::kGpuFabricInfoV3 == nvmlGpuFabricInfo_v3, "nvmlGpuFabricInfo_v3");
static_assert(n::kFabricHealthUnhealthy == NVML_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY &&
                  n::kFabricHealthLimitedCapacity ==
                      NVML_GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY,
              "NVML_GPU_FABRIC_HEALTH_SUMMARY_*");
#endif

// The throttle-reason names exist in every nvml.h (deprecated aliases since 12.2).
static_assert(n::kClocksGpuIdle == nvmlClocksThrottleReasonGpuIdle &&
                  n::kClocksApplicationsClocksSetting ==
                      nvmlClocksThrottleReasonApplicationsClocksSetting &&
                  n::kClocksSwPowerCap == nvmlClocksThrottleReasonSwPowerCap &&
                  n::kClocksHwSlowdown == nvmlClocksThrottleReasonHwSlowdown &&
                  n::kClocksSyncBoost == nvmlClocksThrottleReasonSyncBoost &&
                  n::kClocksSwThermalSlowdown == nvmlClocksThrottleReasonSwThermalSlowdown &&
                  n::kClocksHwThermalSlowdown == nvmlClocksThrottleReasonHwThermalSlowdown &&
                  n::kClocksHwPowerBrakeSlowdown == nvmlClocksThrottleReasonHwPowerBrakeSlowdown &&
                  n::kClocksDisplayClockSetting == nvmlClocksThrottleReasonDisplayClockSetting,
              "clock event reason bits");
static_assert(n::kNvLinkMaxLinks >= NVML_NVLINK_MAX_LINKS, "NVML_NVLINK_MAX_LINKS");
static_assert(n::kNvLinkErrorDlReplay == NVML_NVLINK_ERROR_DL_REPLAY &&
                  n::kNvLinkErrorDlRecovery == NVML_NVLINK_ERROR_DL_RECOVERY &&
                  n::kNvLinkErrorDlCrcFlit == NVML_NVLINK_ERROR_DL_CRC_FLIT &&
                  n::kNvLinkErrorDlCrcData == NVML_NVLINK_ERROR_DL_CRC_DATA,
              "nvmlNvLinkErrorCounter_t");
static_assert(n::kComputeModeProhibited == NVML_COMPUTEMODE_PROHIBITED &&
                  n::kComputeModeExclusiveProcess == NVML_COMPUTEMODE_EXCLUSIVE_PROCESS,
              "nvmlComputeMode_t");
static_assert(n::kTemperatureGpu == NVML_TEMPERATURE_GPU &&
                  n::kTemperatureThresholdSlowdown == NVML_TEMPERATURE_THRESHOLD_SLOWDOWN &&
                  n::kTemperatureThresholdShutdown == NVML_TEMPERATURE_THRESHOLD_SHUTDOWN,
              "temperature sensors and thresholds");
static_assert(n::kMemoryErrorUncorrected == NVML_MEMORY_ERROR_TYPE_UNCORRECTED &&
                  n::kVolatileEcc == NVML_VOLATILE_ECC && n::kAggregateEcc == NVML_AGGREGATE_ECC &&
                  n::kRetirementDoubleBit == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
              "ECC and page retirement enums");
static_assert(n::kErrorNotSupported == NVML_ERROR_NOT_SUPPORTED &&
                  n::kErrorFunctionNotFound == NVML_ERROR_FUNCTION_NOT_FOUND &&
                  n::kErrorGpuIsLost == NVML_ERROR_GPU_IS_LOST &&
                  n::kErrorResetRequired == NVML_ERROR_RESET_REQUIRED,
              "nvmlReturn_t");
#ifdef NVML_GPU_FABRIC_UUID_LEN  // NVML 12.0 (the code came in 11.8, no macro marks that)
static_assert(n::kErrorArgumentVersionMismatch == NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
              "NVML_ERROR_ARGUMENT_VERSION_MISMATCH");
#endif
static_assert(n::kVbiosVersionBufferSize == NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE &&
                  n::kInforomVersionBufferSize == NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE &&
                  n::kSerialBufferSize == NVML_DEVICE_SERIAL_BUFFER_SIZE &&
                  n::kPartNumberBufferSize == NVML_DEVICE_PART_NUMBER_BUFFER_SIZE,
              "buffer sizes");
