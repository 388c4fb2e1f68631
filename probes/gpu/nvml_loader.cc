#include <dlfcn.h>

#include "probes/gpu/nvml_api.h"

namespace fabkit::probes::nvml {
namespace {

// dlsym into a typed pointer; false with the loader's message when the symbol is absent.
template <typename F>
bool bind(void* handle, const char* name, F* out, std::string* error) {
  ::dlerror();
  void* sym = ::dlsym(handle, name);
  if (sym == nullptr) {
    const char* why = ::dlerror();
    *error = std::string("dlsym ") + name + ": " + (why ? why : "symbol is null");
    return false;
  }
  *out = reinterpret_cast<F>(sym);
  return true;
}

// An entry point a driver may predate: null, and its name in `missing`, when absent.
template <typename F>
void bind_optional(void* handle, const char* name, F* out, std::vector<std::string>* missing) {
  std::string ignored;
  if (!bind(handle, name, out, &ignored)) {
    *out = nullptr;
    missing->push_back(name);
  }
}

// The health entry points, newest names first where NVML renamed or versioned a call.
void bind_health(void* h, Table& t, std::vector<std::string>* m) {
  bind_optional(h, "nvmlDeviceGetEccMode", &t.ecc_mode, m);
  bind_optional(h, "nvmlDeviceGetTotalEccErrors", &t.total_ecc_errors, m);
  bind_optional(h, "nvmlDeviceGetMemoryErrorCounter", &t.memory_error_counter, m);
  bind_optional(h, "nvmlDeviceGetRetiredPages", &t.retired_pages, m);
  bind_optional(h, "nvmlDeviceGetRetiredPagesPendingStatus", &t.retired_pages_pending, m);
  bind_optional(h, "nvmlDeviceGetRemappedRows", &t.remapped_rows, m);
  bind_optional(h, "nvmlDeviceGetCurrentClocksEventReasons", &t.clocks_event_reasons, m);
  bind_optional(h, "nvmlDeviceGetCurrentClocksThrottleReasons", &t.clocks_throttle_reasons, m);
  bind_optional(h, "nvmlDeviceGetTemperatureV", &t.temperature_v, m);
  bind_optional(h, "nvmlDeviceGetTemperature", &t.temperature, m);
  bind_optional(h, "nvmlDeviceGetTemperatureThreshold", &t.temperature_threshold, m);
  bind_optional(h, "nvmlDeviceGetPersistenceMode", &t.persistence_mode, m);
  bind_optional(h, "nvmlDeviceGetCurrPcieLinkGeneration", &t.curr_pcie_generation, m);
  bind_optional(h, "nvmlDeviceGetCurrPcieLinkWidth", &t.curr_pcie_width, m);
  bind_optional(h, "nvmlDeviceGetMaxPcieLinkGeneration", &t.max_pcie_generation, m);
  bind_optional(h, "nvmlDeviceGetMaxPcieLinkWidth", &t.max_pcie_width, m);
  bind_optional(h, "nvmlDeviceGetNvLinkState", &t.nvlink_state, m);
  bind_optional(h, "nvmlDeviceGetNvLinkErrorCounter", &t.nvlink_error_counter, m);
  bind_optional(h, "nvmlDeviceGetGpuFabricInfoV", &t.gpu_fabric_info_v, m);
  bind_optional(h, "nvmlDeviceGetGpuFabricInfo", &t.gpu_fabric_info, m);
  bind_optional(h, "nvmlDeviceGetComputeRunningProcesses_v3", &t.compute_processes_v3, m);
  bind_optional(h, "nvmlDeviceGetComputeRunningProcesses_v2", &t.compute_processes_v2, m);
  bind_optional(h, "nvmlDeviceGetMigMode", &t.mig_mode, m);
  bind_optional(h, "nvmlDeviceGetComputeMode", &t.compute_mode, m);
  bind_optional(h, "nvmlDeviceGetVbiosVersion", &t.vbios_version, m);
  bind_optional(h, "nvmlDeviceGetInforomImageVersion", &t.inforom_image_version, m);
  bind_optional(h, "nvmlDeviceGetSerial", &t.serial, m);
  bind_optional(h, "nvmlDeviceGetBoardPartNumber", &t.board_part_number, m);
}

}  // namespace

Library load_library(const std::string& soname) {
  Library lib;
  // RTLD_LOCAL: NVML's symbols must not satisfy anything else loaded later (libnccl, cudart).
  void* h = ::dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* why = ::dlerror();
    lib.error = "dlopen " + soname + ": " + (why ? why : "failed");
    return lib;
  }
  lib.handle = std::shared_ptr<void>(h, [](void* p) { ::dlclose(p); });
  Table& t = lib.table;
  std::string& e = lib.error;
  bool ok = bind(h, "nvmlInit_v2", &t.init, &e) && bind(h, "nvmlShutdown", &t.shutdown, &e) &&
            bind(h, "nvmlErrorString", &t.error_string, &e) &&
            bind(h, "nvmlSystemGetDriverVersion", &t.driver_version, &e) &&
            bind(h, "nvmlSystemGetCudaDriverVersion_v2", &t.cuda_driver_version, &e) &&
            bind(h, "nvmlDeviceGetCount_v2", &t.device_count, &e) &&
            bind(h, "nvmlDeviceGetHandleByIndex_v2", &t.device_handle, &e) &&
            bind(h, "nvmlDeviceGetName", &t.device_name, &e) &&
            bind(h, "nvmlDeviceGetUUID", &t.device_uuid, &e) &&
            bind(h, "nvmlDeviceGetPciInfo_v3", &t.device_pci_info, &e) &&
            bind(h, "nvmlDeviceGetMemoryInfo", &t.device_memory, &e) &&
            bind(h, "nvmlDeviceGetCudaComputeCapability", &t.device_compute_capability, &e);
  if (!ok) {
    lib.table = Table{};
    lib.handle.reset();
    return lib;
  }
  bind_optional(h, "nvmlDeviceGetNumaNodeId", &t.device_numa_node, &lib.missing);
  bind_health(h, t, &lib.missing);
  lib.loaded = true;
  lib.error.clear();
  return lib;
}

std::string describe(const Table& t, Return r) {
  const char* text = t.error_string ? t.error_string(r) : nullptr;
  return std::string(text && *text ? text : "unknown NVML error") + " (NVML error " +
         std::to_string(r) + ")";
}

}  // namespace fabkit::probes::nvml
