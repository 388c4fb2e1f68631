#include <chrono>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "common/errors.h"
#include "common/file_reader.h"
#include "common/json_read.h"
#include "common/replay_file.h"
#include "probes/gpu/gpu_facts.h"
#include "probes/gpu/nvml_call.h"
#include "probes/gpu/nvml_fake.h"
#include "topo/pci_bus_id.h"

namespace fabkit::probes {
namespace {

std::string version_text(int v) {  // the CUDA driver API encodes 13.0 as 13000
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

using gpu_detail::named;

// sysfs numa_node of the PCI device: -1 means the device is not local to one node.
std::optional<int> sysfs_numa_node(const ProbeContext& ctx, const std::string& bus_id) {
  auto node = read_int(ctx.roots.sys / "bus/pci/devices" / bus_id / "numa_node");
  if (!node || *node < 0 || *node > INT32_MAX) return std::nullopt;
  return static_cast<int>(*node);
}

GpuDevice query_device(const ProbeContext& ctx, const nvml::Table& t, unsigned index,
                       bool name_processes) {
  GpuDevice d;
  d.index = static_cast<int>(index);
  nvml::Device h = nullptr;
  nvml::Return r = t.device_handle(index, &h);
  if (r != nvml::kSuccess) {
    d.errors.push_back(named(t, "nvmlDeviceGetHandleByIndex_v2", r));
    d.error_codes["nvmlDeviceGetHandleByIndex_v2"] = r;
    return d;
  }
  char text[nvml::kNameBufferSize] = {};
  auto failed = [&](const char* call) {
    d.errors.push_back(named(t, call, r));
    d.error_codes[call] = r;
  };
  if ((r = t.device_name(h, text, sizeof text)) == nvml::kSuccess)
    d.name = text;
  else
    failed("nvmlDeviceGetName");
  char uuid[nvml::kUuidBufferSize] = {};
  if ((r = t.device_uuid(h, uuid, sizeof uuid)) == nvml::kSuccess)
    d.uuid = uuid;
  else
    failed("nvmlDeviceGetUUID");
  nvml::PciInfo pci{};
  if ((r = t.device_pci_info(h, &pci)) == nvml::kSuccess) {
    pci.bus_id[sizeof pci.bus_id - 1] = '\0';
    d.bus_id = topo::normalize_bus_id(pci.bus_id).value_or(pci.bus_id);
  } else {
    failed("nvmlDeviceGetPciInfo_v3");
  }
  nvml::Memory mem{};
  if ((r = t.device_memory(h, &mem)) == nvml::kSuccess)
    d.memory_bytes = mem.total;
  else
    failed("nvmlDeviceGetMemoryInfo");
  int major = 0, minor = 0;
  if ((r = t.device_compute_capability(h, &major, &minor)) == nvml::kSuccess)
    d.compute_capability = std::to_string(major) + "." + std::to_string(minor);
  else
    failed("nvmlDeviceGetCudaComputeCapability");
  // NVML's answer first; NOT_SUPPORTED (or an old driver without the call) falls back to the
  // kernel's view of the same PCI device, which is what NVML reads on most platforms anyway.
  if (t.device_numa_node) {
    unsigned node = 0;
    r = t.device_numa_node(h, &node);
    if (r == nvml::kSuccess) {
      d.numa_node = static_cast<int>(node);
      d.numa_source = "nvml";
    } else if (r != nvml::kErrorNotSupported) {
      failed("nvmlDeviceGetNumaNodeId");
    }
  }
  if (!d.numa_node && !d.bus_id.empty()) {
    d.numa_node = sysfs_numa_node(ctx, d.bus_id);
    if (d.numa_node) d.numa_source = "sysfs";
  }
  // A GPU that fell off the bus answers nothing else; its inventory errors say so already.
  bool lost = false;
  for (const auto& [call, code] : d.error_codes) lost = lost || code == nvml::kErrorGpuIsLost;
  if (!lost) gather_gpu_health(ctx, t, h, name_processes, d);
  return d;
}

void query(const ProbeContext& ctx, const nvml::Table& t, bool name_processes, GpuFacts& f) {
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
    for (unsigned i = 0; i < count; ++i)
      f.devices.push_back(query_device(ctx, t, i, name_processes));
  } else {
    f.errors.push_back(named(t, "nvmlDeviceGetCount_v2", r));
  }
  if ((r = t.shutdown()) != nvml::kSuccess) f.errors.push_back(named(t, "nvmlShutdown", r));
}

// The fixture-driven NVML table over a file written by --nvml-record; UsageError naming the file
// and what is wrong with it otherwise.
nvml::Library replay_library(const std::string& path) {
  const std::string fix = "; give a file written by `fabcheck node --nvml-record FILE`";
  constexpr uintmax_t kMaxBytes = 16u << 20;  // a recorded 8-GPU node is ~25 KB
  const Json fixture = read_replay_json("--nvml-replay " + path, path, kMaxBytes, fix);
  try {
    return nvml::fake_library(fixture);
  } catch (const std::invalid_argument& e) {
    throw UsageError("--nvml-replay " + path + ": " + e.what() + fix);
  }
}

}  // namespace

GpuFacts gather_gpu(const ProbeContext& ctx, const nvml::Library& lib, bool name_processes) {
  GpuFacts f;
  f.cuda_visible_devices = ctx.env.get("CUDA_VISIBLE_DEVICES");
  auto start = std::chrono::steady_clock::now();
  if (!ctx.roots.live && !ctx.options.nvml_replay) {
    f.skipped = true;  // NVML would describe this machine, not the captured tree
  } else if (!lib.loaded) {
    f.nvml_error = lib.error;
  } else {
    f.nvml_loaded = true;
    query(ctx, lib.table, name_processes, f);
  }
  f.query_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return f;
}

GpuFacts gather_gpu(const ProbeContext& ctx) {
  if (ctx.options.nvml_replay) {
    const std::string path = ctx.options.nvml_replay->string();
    nvml::Library lib = replay_library(path);
    // Recorded on another machine: its PIDs are ours only inside its own captured tree.
    GpuFacts f = gather_gpu(ctx, lib, !ctx.roots.live);
    f.replay = path;
    return f;
  }
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
