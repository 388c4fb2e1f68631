// The fake NVML's entry points: each counts its call, answers the code a fixture's "errors" names,
// else Not Supported where the fixture lacks the member, else the fixture's value.
#include "probes/gpu/nvml_fake.h"

#include <cstring>
#include <memory>
#include <stdexcept>

#include "probes/gpu/nvml_fake_state.h"

namespace fabkit::probes::nvml {
namespace {

using fake_detail::FakeDevice;
using fake_detail::FakeState;

// The fake installed last; kept alive here too so fake_calls() can read it after the library is gone.
std::shared_ptr<FakeState> g_state;

// NVML's own texts (nvmlErrorString) for the codes fixtures use.
const char* fake_error_string(Return r) {
  switch (r) {
    case kSuccess: return "Success";
    case kErrorUninitialized: return "Uninitialized";
    case kErrorInvalidArgument: return "Invalid Argument";
    case kErrorNotSupported: return "Not Supported";
    case kErrorNoPermission: return "Insufficient Permissions";
    case kErrorNotFound:
      return "Not Found";
    case kErrorInsufficientSize: return "Insufficient Size";
    case kErrorDriverNotLoaded: return "Driver Not Loaded";
    case kErrorFunctionNotFound:
      return "Function Not Found";
    case kErrorCorruptedInforom:
      return "Corrupted infoROM";
    case kErrorGpuIsLost: return "GPU is lost";
    case kErrorResetRequired:
      return "GPU requires reset";
    case kErrorLibRmVersionMismatch: return "RM has detected an NVML/RM version mismatch.";
    case kErrorArgumentVersionMismatch:
      return "Argument version mismatch";
    default: return "Unknown Error";
  }
}

void count(const char* call) {
  ++g_state->calls.total;
  ++g_state->calls.by_call[call];
}

FakeDevice* dev(Device h) { return reinterpret_cast<FakeDevice*>(h); }
// Counts the call; the code the fixture's "errors" gives it ("*" for every health call).
Return err(Device h, const char* call, bool health = true) {
  count(call);
  const auto& errors = dev(h)->errors;
  if (auto it = errors.find(call); it != errors.end()) return it->second;
  if (auto it = errors.find("*"); health && it != errors.end()) return it->second;
  return kSuccess;
}
Return copy(const std::string& s, char* buf, unsigned len) {
  if (s.size() + 1 > len) return kErrorInsufficientSize;
  std::memcpy(buf, s.c_str(), s.size() + 1);
  return kSuccess;
}
template <typename T>
Return give(const std::optional<T>& v, T* out) {
  if (!v) return kErrorNotSupported;
  *out = *v;
  return kSuccess;
}

// Inventory.
Return f_init() {
  count("nvmlInit_v2");
  ++g_state->calls.init;
  return g_state->init;
}
Return f_shutdown() {
  count("nvmlShutdown");
  ++g_state->calls.shutdown;
  return kSuccess;
}
Return f_driver_version(char* buf, unsigned len) {
  count("nvmlSystemGetDriverVersion");
  return copy(g_state->driver_version, buf, len);
}
Return f_cuda_driver_version(int* v) {
  count("nvmlSystemGetCudaDriverVersion_v2");
  *v = g_state->cuda_driver_version;
  return kSuccess;
}
Return f_count(unsigned* n) {
  count("nvmlDeviceGetCount_v2");
  if (g_state->count_error != kSuccess) return g_state->count_error;
  *n = static_cast<unsigned>(g_state->devices.size());
  return kSuccess;
}
Return f_handle(unsigned i, Device* h) {
  count("nvmlDeviceGetHandleByIndex_v2");
  if (i >= g_state->devices.size()) return kErrorInvalidArgument;
  FakeDevice& d = g_state->devices[i];
  if (auto it = d.errors.find("nvmlDeviceGetHandleByIndex_v2"); it != d.errors.end())
    return it->second;
  *h = reinterpret_cast<Device>(&d);
  return kSuccess;
}
Return f_name(Device h, char* buf, unsigned len) {
  Return r = err(h, "nvmlDeviceGetName", false);
  return r != kSuccess ? r : copy(dev(h)->name, buf, len);
}
Return f_uuid(Device h, char* buf, unsigned len) {
  Return r = err(h, "nvmlDeviceGetUUID", false);
  return r != kSuccess ? r : copy(dev(h)->uuid, buf, len);
}
Return f_pci(Device h, PciInfo* p) {
  if (Return r = err(h, "nvmlDeviceGetPciInfo_v3", false); r != kSuccess) return r;
  *p = PciInfo{};
  return copy(dev(h)->bus_id, p->bus_id, sizeof p->bus_id);
}
Return f_memory(Device h, Memory* m) {
  if (Return r = err(h, "nvmlDeviceGetMemoryInfo", false); r != kSuccess) return r;
  *m = Memory{dev(h)->memory_total, dev(h)->memory_total, 0};
  return kSuccess;
}
Return f_cc(Device h, int* major, int* minor) {
  if (Return r = err(h, "nvmlDeviceGetCudaComputeCapability", false); r != kSuccess) return r;
  *major = dev(h)->cc_major;
  *minor = dev(h)->cc_minor;
  return kSuccess;
}
Return f_numa(Device h, unsigned* node) {
  if (Return r = err(h, "nvmlDeviceGetNumaNodeId", false); r != kSuccess) return r;
  return give(dev(h)->numa_node, node);
}

// Identity.
Return text(Device h, const char* call, const std::optional<std::string>& v, char* buf,
            unsigned len) {
  if (Return r = err(h, call); r != kSuccess) return r;
  return v ? copy(*v, buf, len) : kErrorNotSupported;
}
Return f_vbios(Device h, char* b, unsigned n) {
  return text(h, "nvmlDeviceGetVbiosVersion", dev(h)->vbios, b, n);
}
Return f_inforom(Device h, char* b, unsigned n) {
  return text(h, "nvmlDeviceGetInforomImageVersion", dev(h)->inforom, b, n);
}
Return f_serial(Device h, char* b, unsigned n) {
  return text(h, "nvmlDeviceGetSerial", dev(h)->serial, b, n);
}
Return f_part(Device h, char* b, unsigned n) {
  return text(h, "nvmlDeviceGetBoardPartNumber", dev(h)->part_number, b, n);
}

// Memory health.
Return f_ecc_mode(Device h, EnableState* current, EnableState* pending) {
  if (Return r = err(h, "nvmlDeviceGetEccMode"); r != kSuccess) return r;
  if (!dev(h)->ecc_mode) return kErrorNotSupported;
  *current = dev(h)->ecc_mode->first ? kFeatureEnabled : kFeatureDisabled;
  *pending = dev(h)->ecc_mode->second ? kFeatureEnabled : kFeatureDisabled;
  return kSuccess;
}
Return f_total_ecc(Device h, int type, int counter, unsigned long long* n) {
  if (Return r = err(h, "nvmlDeviceGetTotalEccErrors"); r != kSuccess) return r;
  auto it = dev(h)->ecc_counts.find({type, counter});
  if (it == dev(h)->ecc_counts.end()) return kErrorNotSupported;
  *n = it->second;
  return kSuccess;
}
Return f_memory_error_counter(Device h, int type, int counter, int location,
                              unsigned long long* n) {
  if (Return r = err(h, "nvmlDeviceGetMemoryErrorCounter"); r != kSuccess) return r;
  auto it = dev(h)->ecc_location_counts.find({type, counter, location});
  if (it == dev(h)->ecc_location_counts.end()) return kErrorNotSupported;
  *n = it->second;
  return kSuccess;
}
Return f_retired_pending(Device h, EnableState* pending) {
  if (Return r = err(h, "nvmlDeviceGetRetiredPagesPendingStatus"); r != kSuccess) return r;
  if (!dev(h)->retired_pending) return kErrorNotSupported;
  *pending = *dev(h)->retired_pending ? kFeatureEnabled : kFeatureDisabled;
  return kSuccess;
}
Return f_retired_pages(Device h, int cause, unsigned* count, unsigned long long* addresses) {
  if (Return r = err(h, "nvmlDeviceGetRetiredPages"); r != kSuccess) return r;
  auto it = dev(h)->retired_pages.find(cause);
  if (it == dev(h)->retired_pages.end()) return kErrorNotSupported;
  // NVML's contract: the needed size, and Insufficient Size when the buffer is smaller.
  bool fits = *count >= it->second;
  for (unsigned i = 0; fits && addresses && i < it->second; ++i) addresses[i] = 0x1000ull * i;
  *count = it->second;
  return fits ? kSuccess : kErrorInsufficientSize;
}
Return f_remapped(Device h, unsigned* corr, unsigned* unc, unsigned* pending, unsigned* failure) {
  if (Return r = err(h, "nvmlDeviceGetRemappedRows"); r != kSuccess) return r;
  if (!dev(h)->remapped) return kErrorNotSupported;
  const auto& v = *dev(h)->remapped;
  *corr = v[0];
  *unc = v[1];
  *pending = v[2];
  *failure = v[3];
  return kSuccess;
}

// Clocks, thermal, power.
Return f_clocks_event(Device h, unsigned long long* mask) {
  if (Return r = err(h, "nvmlDeviceGetCurrentClocksEventReasons"); r != kSuccess) return r;
  return give<unsigned long long>(dev(h)->clocks, mask);
}
Return f_clocks_throttle(Device h, unsigned long long* mask) {
  if (Return r = err(h, "nvmlDeviceGetCurrentClocksThrottleReasons"); r != kSuccess) return r;
  return give<unsigned long long>(dev(h)->clocks, mask);
}
Return f_temperature_v(Device h, TemperatureV1* t) {
  if (Return r = err(h, "nvmlDeviceGetTemperatureV"); r != kSuccess) return r;
  if (t->version != kTemperatureV1) return kErrorArgumentVersionMismatch;
  if (t->sensor_type != kTemperatureGpu) return kErrorInvalidArgument;
  return give(dev(h)->temperature, &t->temperature);
}
Return f_temperature(Device h, int sensor, unsigned* c) {
  if (Return r = err(h, "nvmlDeviceGetTemperature"); r != kSuccess) return r;
  if (sensor != kTemperatureGpu) return kErrorInvalidArgument;
  if (!dev(h)->temperature) return kErrorNotSupported;
  *c = static_cast<unsigned>(*dev(h)->temperature);
  return kSuccess;
}
Return f_threshold(Device h, int which, unsigned* c) {
  if (Return r = err(h, "nvmlDeviceGetTemperatureThreshold"); r != kSuccess) return r;
  auto it = dev(h)->thresholds.find(which);
  if (it == dev(h)->thresholds.end()) return kErrorNotSupported;
  *c = it->second;
  return kSuccess;
}
Return f_persistence(Device h, EnableState* on) {
  if (Return r = err(h, "nvmlDeviceGetPersistenceMode"); r != kSuccess) return r;
  if (!dev(h)->persistence) return kErrorNotSupported;
  *on = *dev(h)->persistence ? kFeatureEnabled : kFeatureDisabled;
  return kSuccess;
}
Return f_cur_gen(Device h, unsigned* v) {
  if (Return r = err(h, "nvmlDeviceGetCurrPcieLinkGeneration"); r != kSuccess) return r;
  return give(dev(h)->pcie_cur_gen, v);
}
Return f_cur_width(Device h, unsigned* v) {
  if (Return r = err(h, "nvmlDeviceGetCurrPcieLinkWidth"); r != kSuccess) return r;
  return give(dev(h)->pcie_cur_width, v);
}
Return f_max_gen(Device h, unsigned* v) {
  if (Return r = err(h, "nvmlDeviceGetMaxPcieLinkGeneration"); r != kSuccess) return r;
  return give(dev(h)->pcie_max_gen, v);
}
Return f_max_width(Device h, unsigned* v) {
  if (Return r = err(h, "nvmlDeviceGetMaxPcieLinkWidth"); r != kSuccess) return r;
  return give(dev(h)->pcie_max_width, v);
}

// NVLink and fabric.
Return f_nvlink_state(Device h, unsigned link, EnableState* active) {
  if (Return r = err(h, "nvmlDeviceGetNvLinkState"); r != kSuccess) return r;
  const auto& links = dev(h)->nvlinks;
  if (!links) return kErrorNotSupported;
  if (link >= links->size()) return kErrorInvalidArgument;
  if (!(*links)[link]) return kErrorNotSupported;
  *active = (*links)[link]->active ? kFeatureEnabled : kFeatureDisabled;
  return kSuccess;
}
Return f_nvlink_counter(Device h, unsigned link, int counter, unsigned long long* v) {
  if (Return r = err(h, "nvmlDeviceGetNvLinkErrorCounter"); r != kSuccess) return r;
  const auto& links = dev(h)->nvlinks;
  if (!links) return kErrorNotSupported;
  if (link >= links->size() || counter < 0 || counter > 3) return kErrorInvalidArgument;
  if (!(*links)[link]) return kErrorNotSupported;
  return give<unsigned long long>((*links)[link]->counters[static_cast<size_t>(counter)], v);
}
template <typename Info>
void fill_fabric(const fake_detail::FakeFabric& f, Info* out) {
  std::memcpy(out->cluster_uuid, f.uuid, sizeof f.uuid);
  out->status = f.status;
  out->clique_id = f.clique_id;
  out->state = f.state;
}
Return f_fabric_v(Device h, GpuFabricInfoV3* info) {
  if (Return r = err(h, "nvmlDeviceGetGpuFabricInfoV"); r != kSuccess) return r;
  const auto& f = dev(h)->fabric;
  if (!f) return kErrorNotSupported;
  // A driver accepts the versions it knows: v2 and, from NVML 13.0, v3.
  bool v3 = info->version == kGpuFabricInfoV3 && f->max_version >= 3;
  bool v2 = info->version == kGpuFabricInfoV2 && f->max_version >= 2;
  if (!v3 && !v2) return kErrorArgumentVersionMismatch;
  fill_fabric(*f, info);
  info->health_mask = f->health_mask;
  if (v3) info->health_summary = f->health_summary;
  return kSuccess;
}
Return f_fabric(Device h, GpuFabricInfo* info) {
  if (Return r = err(h, "nvmlDeviceGetGpuFabricInfo"); r != kSuccess) return r;
  if (!dev(h)->fabric) return kErrorNotSupported;
  fill_fabric(*dev(h)->fabric, info);
  return kSuccess;
}

// Processes and modes.
Return processes(Device h, const char* call, unsigned* count, ProcessInfo* infos) {
  if (Return r = err(h, call); r != kSuccess) return r;
  const auto& ps = dev(h)->processes;
  if (!ps) return kErrorNotSupported;
  if (*count < ps->size()) {
    *count = static_cast<unsigned>(ps->size());
    return kErrorInsufficientSize;
  }
  for (size_t i = 0; i < ps->size(); ++i)
    infos[i] = ProcessInfo{(*ps)[i].pid, (*ps)[i].used_memory.value_or(kValueNotAvailable),
                           0xFFFFFFFFu, 0xFFFFFFFFu};
  *count = static_cast<unsigned>(ps->size());
  return kSuccess;
}
Return f_procs_v3(Device h, unsigned* count, ProcessInfo* infos) {
  return processes(h, "nvmlDeviceGetComputeRunningProcesses_v3", count, infos);
}
Return f_procs_v2(Device h, unsigned* count, ProcessInfo* infos) {
  return processes(h, "nvmlDeviceGetComputeRunningProcesses_v2", count, infos);
}
Return f_mig(Device h, unsigned* current, unsigned* pending) {
  if (Return r = err(h, "nvmlDeviceGetMigMode"); r != kSuccess) return r;
  if (!dev(h)->mig) return kErrorNotSupported;
  *current = dev(h)->mig->first ? 1 : 0;
  *pending = dev(h)->mig->second ? 1 : 0;
  return kSuccess;
}
Return f_compute_mode(Device h, int* mode) {
  if (Return r = err(h, "nvmlDeviceGetComputeMode"); r != kSuccess) return r;
  return give(dev(h)->compute_mode, mode);
}

// Installs an optional entry point unless the fixture names it missing.
template <typename F>
void install(const FakeState& s, const char* name, F* slot, F fn) {
  *slot = s.missing.count(name) ? nullptr : fn;
}

void install_health(const FakeState& s, Table& t) {
  install(s, "nvmlDeviceGetNumaNodeId", &t.device_numa_node, f_numa);
  install(s, "nvmlDeviceGetEccMode", &t.ecc_mode, f_ecc_mode);
  install(s, "nvmlDeviceGetTotalEccErrors", &t.total_ecc_errors, f_total_ecc);
  install(s, "nvmlDeviceGetMemoryErrorCounter", &t.memory_error_counter, f_memory_error_counter);
  install(s, "nvmlDeviceGetRetiredPages", &t.retired_pages, f_retired_pages);
  install(s, "nvmlDeviceGetRetiredPagesPendingStatus", &t.retired_pages_pending, f_retired_pending);
  install(s, "nvmlDeviceGetRemappedRows", &t.remapped_rows, f_remapped);
  install(s, "nvmlDeviceGetCurrentClocksEventReasons", &t.clocks_event_reasons, f_clocks_event);
  install(s, "nvmlDeviceGetCurrentClocksThrottleReasons", &t.clocks_throttle_reasons,
          f_clocks_throttle);
  install(s, "nvmlDeviceGetTemperatureV", &t.temperature_v, f_temperature_v);
  install(s, "nvmlDeviceGetTemperature", &t.temperature, f_temperature);
  install(s, "nvmlDeviceGetTemperatureThreshold", &t.temperature_threshold, f_threshold);
  install(s, "nvmlDeviceGetPersistenceMode", &t.persistence_mode, f_persistence);
  install(s, "nvmlDeviceGetCurrPcieLinkGeneration", &t.curr_pcie_generation, f_cur_gen);
  install(s, "nvmlDeviceGetCurrPcieLinkWidth", &t.curr_pcie_width, f_cur_width);
  install(s, "nvmlDeviceGetMaxPcieLinkGeneration", &t.max_pcie_generation, f_max_gen);
  install(s, "nvmlDeviceGetMaxPcieLinkWidth", &t.max_pcie_width, f_max_width);
  install(s, "nvmlDeviceGetNvLinkState", &t.nvlink_state, f_nvlink_state);
  install(s, "nvmlDeviceGetNvLinkErrorCounter", &t.nvlink_error_counter, f_nvlink_counter);
  install(s, "nvmlDeviceGetGpuFabricInfoV", &t.gpu_fabric_info_v, f_fabric_v);
  install(s, "nvmlDeviceGetGpuFabricInfo", &t.gpu_fabric_info, f_fabric);
  install(s, "nvmlDeviceGetComputeRunningProcesses_v3", &t.compute_processes_v3, f_procs_v3);
  install(s, "nvmlDeviceGetComputeRunningProcesses_v2", &t.compute_processes_v2, f_procs_v2);
  install(s, "nvmlDeviceGetMigMode", &t.mig_mode, f_mig);
  install(s, "nvmlDeviceGetComputeMode", &t.compute_mode, f_compute_mode);
  install(s, "nvmlDeviceGetVbiosVersion", &t.vbios_version, f_vbios);
  install(s, "nvmlDeviceGetInforomImageVersion", &t.inforom_image_version, f_inforom);
  install(s, "nvmlDeviceGetSerial", &t.serial, f_serial);
  install(s, "nvmlDeviceGetBoardPartNumber", &t.board_part_number, f_part);
}

}  // namespace

Library fake_library(const Json& fixture) {
  Library lib;
  if (!fixture.is_object())
    throw std::invalid_argument("NVML fixture: top level: is not an object");
  if (fixture.contains("load_error")) {
    if (!fixture["load_error"].is_string())
      throw std::invalid_argument("NVML fixture: load_error: is not a string");
    lib.error = fixture["load_error"].get<std::string>();
    return lib;
  }
  auto state = std::make_shared<FakeState>();
  fake_detail::parse_fixture(fixture, *state);
  g_state = state;
  lib.handle = std::shared_ptr<void>(state, state.get());
  Table& t = lib.table;
  t.init = f_init;
  t.shutdown = f_shutdown;
  t.error_string = fake_error_string;
  t.driver_version = f_driver_version;
  t.cuda_driver_version = f_cuda_driver_version;
  t.device_count = f_count;
  t.device_handle = f_handle;
  t.device_name = f_name;
  t.device_uuid = f_uuid;
  t.device_pci_info = f_pci;
  t.device_memory = f_memory;
  t.device_compute_capability = f_cc;
  install_health(*state, t);
  lib.missing.assign(state->missing.begin(), state->missing.end());
  lib.loaded = true;
  return lib;
}

FakeCalls fake_calls() { return g_state ? g_state->calls : FakeCalls{}; }

}  // namespace fabkit::probes::nvml
