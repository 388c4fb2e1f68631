#include <chrono>
#include <fstream>

#include "probes/gpu/gpu_facts.h"
#include "topo/pci_bus_id.h"

namespace fabkit::probes {
namespace {

std::string version_text(int v) {  // the CUDA driver API encodes 13.0 as 13000
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// "<call>: <nvmlErrorString> (NVML error N)"
std::string named(const nvml::Table& t, const char* call, nvml::Return r) {
  return std::string(call) + ": " + nvml::describe(t, r);
}

// sysfs numa_node of the PCI device: -1 means the device is not local to one node.
std::optional<int> sysfs_numa_node(const ProbeContext& ctx, const std::string& bus_id) {
  std::ifstream in(ctx.roots.sys / "bus/pci/devices" / bus_id / "numa_node");
  int node = -1;
  if (!(in >> node) || node < 0) return std::nullopt;
  return node;
}

GpuDevice query_device(const ProbeContext& ctx, const nvml::Table& t, unsigned index) {
  GpuDevice d;
  d.index = static_cast<int>(index);
  nvml::Device h = nullptr;
  nvml::Return r = t.device_handle(index, &h);
  if (r != nvml::kSuccess) {
    d.errors.push_back(named(t, "nvmlDeviceGetHandleByIndex_v2", r));
    return d;
  }
  char text[nvml::kNameBufferSize] = {};
  if ((r = t.device_name(h, text, sizeof text)) == nvml::kSuccess)
    d.name = text;
  else
    d.errors.push_back(named(t, "nvmlDeviceGetName", r));
  char uuid[nvml::kUuidBufferSize] = {};
  if ((r = t.device_uuid(h, uuid, sizeof uuid)) == nvml::kSuccess)
    d.uuid = uuid;
  else
    d.errors.push_back(named(t, "nvmlDeviceGetUUID", r));
  nvml::PciInfo pci{};
  if ((r = t.device_pci_info(h, &pci)) == nvml::kSuccess) {
    pci.bus_id[sizeof pci.bus_id - 1] = '\0';
    d.bus_id = topo::normalize_bus_id(pci.bus_id).value_or(pci.bus_id);
  } else {
    d.errors.push_back(named(t, "nvmlDeviceGetPciInfo_v3", r));
  }
  nvml::Memory mem{};
  if ((r = t.device_memory(h, &mem)) == nvml::kSuccess)
    d.memory_bytes = mem.total;
  else
    d.errors.push_back(named(t, "nvmlDeviceGetMemoryInfo", r));
  int major = 0, minor = 0;
  if ((r = t.device_compute_capability(h, &major, &minor)) == nvml::kSuccess)
    d.compute_capability = std::to_string(major) + "." + std::to_string(minor);
  else
    d.errors.push_back(named(t, "nvmlDeviceGetCudaComputeCapability", r));
  // NVML's answer first; NOT_SUPPORTED (or an old driver without the call) falls back to the
  // kernel's view of the same PCI device, which is what NVML reads on most platforms anyway.
  if (t.device_numa_node) {
    unsigned node = 0;
    r = t.device_numa_node(h, &node);
    if (r == nvml::kSuccess) {
      d.numa_node = static_cast<int>(node);
      d.numa_source = "nvml";
    } else if (r != nvml::kErrorNotSupported) {
      d.errors.push_back(named(t, "nvmlDeviceGetNumaNodeId", r));
    }
  }
  if (!d.numa_node && !d.bus_id.empty()) {
    d.numa_node = sysfs_numa_node(ctx, d.bus_id);
    if (d.numa_node) d.numa_source = "sysfs";
  }
  return d;
}

void query(const ProbeContext& ctx, const nvml::Table& t, GpuFacts& f) {
  nvml::Return r = t.init();
  if (r != nvml::kSuccess) {
    f.nvml_init_code = r;
    f.nvml_error = named(t, "nvmlInit_v2", r);
    return;
  }
  f.driver_loaded = true;
  char version[nvml::kDriverVersionBufferSize] = {};
  if ((r = t.driver_version(version, sizeof version)) == nvml::kSuccess)
    f.driver_version = version;
  else
    f.errors.push_back(named(t, "nvmlSystemGetDriverVersion", r));
  int cuda = 0;
  if ((r = t.cuda_driver_version(&cuda)) == nvml::kSuccess && cuda > 0)
    f.cuda_driver_version = version_text(cuda);
  else if (r != nvml::kSuccess)
    f.errors.push_back(named(t, "nvmlSystemGetCudaDriverVersion_v2", r));
  unsigned count = 0;
  if ((r = t.device_count(&count)) == nvml::kSuccess) {
    f.count = static_cast<int>(count);
    for (unsigned i = 0; i < count; ++i) f.devices.push_back(query_device(ctx, t, i));
  } else {
    f.errors.push_back(named(t, "nvmlDeviceGetCount_v2", r));
  }
  if ((r = t.shutdown()) != nvml::kSuccess) f.errors.push_back(named(t, "nvmlShutdown", r));
}

}  // namespace

GpuFacts gather_gpu(const ProbeContext& ctx, const nvml::Library& lib) {
  GpuFacts f;
  f.cuda_visible_devices = ctx.env.get("CUDA_VISIBLE_DEVICES");
  auto start = std::chrono::steady_clock::now();
  if (!ctx.roots.live) {
    f.skipped = true;  // NVML would describe this machine, not the captured tree
  } else if (!lib.loaded) {
    f.nvml_error = lib.error;
  } else {
    f.nvml_loaded = true;
    query(ctx, lib.table, f);
  }
  f.query_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return f;
}

GpuFacts gather_gpu(const ProbeContext& ctx) {
  if (!ctx.roots.live) return gather_gpu(ctx, nvml::Library{});
  auto start = std::chrono::steady_clock::now();
  nvml::Library lib = nvml::load_library();
  GpuFacts f = gather_gpu(ctx, lib);
  // The dlopen is part of the cost a user waits for.
  f.query_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return f;
}

}  // namespace fabkit::probes
