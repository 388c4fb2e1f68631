#include "probes/gpu/nvml_fake.h"

#include <cstring>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

namespace fabkit::probes::nvml {
namespace {

struct FakeDevice {
  std::string name, uuid, bus_id;
  std::optional<unsigned> numa_node;
  unsigned long long memory_total = 0;
  int cc_major = 0, cc_minor = 0;
  std::map<std::string, Return> errors;  // NVML call name -> the code it returns
};

struct FakeState {
  Return init = kSuccess;
  std::string driver_version;
  int cuda_driver_version = 0;
  Return count_error = kSuccess;
  std::vector<FakeDevice> devices;
  FakeCalls calls;
};

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
    case kErrorInsufficientSize: return "Insufficient Size";
    case kErrorDriverNotLoaded: return "Driver Not Loaded";
    case kErrorGpuIsLost: return "GPU is lost";
    case kErrorLibRmVersionMismatch: return "RM has detected an NVML/RM version mismatch.";
    default: return "Unknown Error";
  }
}

FakeDevice* dev(Device h) { return reinterpret_cast<FakeDevice*>(h); }
Return err(Device h, const char* call) {
  auto it = dev(h)->errors.find(call);
  return it == dev(h)->errors.end() ? kSuccess : it->second;
}
Return copy(const std::string& s, char* buf, unsigned len) {
  if (s.size() + 1 > len) return kErrorInsufficientSize;
  std::memcpy(buf, s.c_str(), s.size() + 1);
  return kSuccess;
}

Return f_init() {
  ++g_state->calls.init;
  return g_state->init;
}
Return f_shutdown() {
  ++g_state->calls.shutdown;
  return kSuccess;
}
Return f_driver_version(char* buf, unsigned len) { return copy(g_state->driver_version, buf, len); }
Return f_cuda_driver_version(int* v) {
  *v = g_state->cuda_driver_version;
  return kSuccess;
}
Return f_count(unsigned* n) {
  if (g_state->count_error != kSuccess) return g_state->count_error;
  *n = static_cast<unsigned>(g_state->devices.size());
  return kSuccess;
}
Return f_handle(unsigned i, Device* h) {
  if (i >= g_state->devices.size()) return kErrorInvalidArgument;
  FakeDevice& d = g_state->devices[i];
  if (auto it = d.errors.find("nvmlDeviceGetHandleByIndex_v2"); it != d.errors.end())
    return it->second;
  *h = reinterpret_cast<Device>(&d);
  return kSuccess;
}
Return f_name(Device h, char* buf, unsigned len) {
  Return r = err(h, "nvmlDeviceGetName");
  return r != kSuccess ? r : copy(dev(h)->name, buf, len);
}
Return f_uuid(Device h, char* buf, unsigned len) {
  Return r = err(h, "nvmlDeviceGetUUID");
  return r != kSuccess ? r : copy(dev(h)->uuid, buf, len);
}
Return f_pci(Device h, PciInfo* p) {
  if (Return r = err(h, "nvmlDeviceGetPciInfo_v3"); r != kSuccess) return r;
  *p = PciInfo{};
  return copy(dev(h)->bus_id, p->bus_id, sizeof p->bus_id);
}
Return f_memory(Device h, Memory* m) {
  if (Return r = err(h, "nvmlDeviceGetMemoryInfo"); r != kSuccess) return r;
  *m = Memory{dev(h)->memory_total, dev(h)->memory_total, 0};
  return kSuccess;
}
Return f_cc(Device h, int* major, int* minor) {
  if (Return r = err(h, "nvmlDeviceGetCudaComputeCapability"); r != kSuccess) return r;
  *major = dev(h)->cc_major;
  *minor = dev(h)->cc_minor;
  return kSuccess;
}
Return f_numa(Device h, unsigned* node) {
  if (Return r = err(h, "nvmlDeviceGetNumaNodeId"); r != kSuccess) return r;
  if (!dev(h)->numa_node) return kErrorNotSupported;
  *node = *dev(h)->numa_node;
  return kSuccess;
}

[[noreturn]] void bad(const std::string& where, const std::string& why) {
  throw std::invalid_argument("NVML fixture: " + where + ": " + why);
}

FakeDevice parse_device(const Json& j, size_t i) {
  std::string where = "devices[" + std::to_string(i) + "]";
  if (!j.is_object()) bad(where, "is not an object");
  FakeDevice d;
  try {
    d.name = j.at("name").get<std::string>();
    d.uuid = j.at("uuid").get<std::string>();
    d.bus_id = j.at("bus_id").get<std::string>();
    if (j.contains("numa_node") && !j["numa_node"].is_null())
      d.numa_node = j["numa_node"].get<unsigned>();
    d.memory_total = j.value("memory_total", 0ull);
    std::string cc = j.value("compute_capability", std::string("0.0"));
    if (std::sscanf(cc.c_str(), "%d.%d", &d.cc_major, &d.cc_minor) != 2)
      bad(where + ".compute_capability", "'" + cc + "' is not MAJOR.MINOR");
    if (j.contains("errors"))
      for (const auto& [call, code] : j["errors"].items()) d.errors[call] = code.get<int>();
  } catch (const Json::exception& e) {
    bad(where, e.what());
  }
  return d;
}

}  // namespace

Library fake_library(const Json& fixture) {
  Library lib;
  if (!fixture.is_object()) bad("top level", "is not an object");
  if (fixture.contains("load_error")) {
    lib.error = fixture["load_error"].get<std::string>();
    return lib;
  }
  auto state = std::make_shared<FakeState>();
  try {
    state->init = fixture.value("init", kSuccess);
    state->driver_version = fixture.value("driver_version", std::string());
    state->cuda_driver_version = fixture.value("cuda_driver_version", 0);
    state->count_error = fixture.value("count_error", kSuccess);
  } catch (const Json::exception& e) {
    bad("top level", e.what());
  }
  if (fixture.contains("devices")) {
    if (!fixture["devices"].is_array()) bad("devices", "is not an array");
    for (size_t i = 0; i < fixture["devices"].size(); ++i)
      state->devices.push_back(parse_device(fixture["devices"][i], i));
  }
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
  // Drivers before R535 lack nvmlDeviceGetNumaNodeId: the loader leaves it null.
  if (fixture.value("numa_entry_point", true)) t.device_numa_node = f_numa;
  lib.loaded = true;
  return lib;
}

FakeCalls fake_calls() { return g_state ? g_state->calls : FakeCalls{}; }

}  // namespace fabkit::probes::nvml
