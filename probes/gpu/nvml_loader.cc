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
  std::string optional_missing;
  if (!bind(h, "nvmlDeviceGetNumaNodeId", &t.device_numa_node, &optional_missing))
    t.device_numa_node = nullptr;
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
