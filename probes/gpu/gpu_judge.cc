#include "probes/gpu/gpu_facts.h"
#include "probes/gpu/gpu_judge_detail.h"

namespace fabkit::probes {
namespace {

const char* kDriverFix =
    "check `nvidia-smi`; load the driver (`modprobe nvidia`), match the user-space driver "
    "(libnvidia-ml) to the kernel module, and in containers run with --gpus all (or the "
    "NVIDIA container toolkit's CDI devices)";

std::string numa_text(const GpuDevice& d) {
  return d.numa_node ? "NUMA " + std::to_string(*d.numa_node) + " (" + d.numa_source + ")"
                     : std::string("NUMA unknown");
}

}  // namespace

std::vector<Finding> judge_gpu(const GpuFacts& f, std::optional<int> nvidia_pci_gpus) {
  std::vector<Finding> out;
  if (f.skipped)
    return {info("gpu.skipped", "NVML",
                 "skipped under --sysroot: NVML reads this machine's driver, not the captured "
                 "tree (PCI-identified GPUs are in the locality section)")};
  int on_bus = nvidia_pci_gpus.value_or(0);
  std::string bus_note =
      nvidia_pci_gpus ? "; " + std::to_string(on_bus) + " NVIDIA GPU(s) are on the PCI bus" : "";
  if (!f.driver_loaded) {
    // No library, or the library without a loaded kernel driver: normal on a CPU node.
    bool no_driver = !f.nvml_loaded || f.nvml_init_code == nvml::kErrorDriverNotLoaded;
    std::string seen = (f.nvml_loaded ? "NVML could not start: " : "no NVIDIA driver: ") +
                       f.nvml_error.value_or("unknown reason");
    if (no_driver && on_bus == 0) {
      out.push_back(info("gpu.no_driver", "NVML", seen + "; no NVIDIA GPU on this node"));
    } else {
      out.push_back(warn(no_driver ? "gpu.driver_missing" : "gpu.nvml_error", "NVML",
                         seen + bus_note, kDriverFix));
    }
    return out;
  }
  out.push_back(info("gpu.found", "NVML",
                     std::to_string(f.count) + " NVIDIA GPU(s), driver " +
                         f.driver_version.value_or("unknown") + ", CUDA driver API " +
                         f.cuda_driver_version.value_or("unknown") +
                         (f.replay ? " (replayed from " + *f.replay + ")" : "")));
  for (const auto& d : f.devices) {
    std::string subject = gpu_detail::subject_of(d);
    out.push_back(info("gpu.device", subject,
                       "GPU " + std::to_string(d.index) + ": " +
                           (d.name.empty() ? "name unknown" : d.name) + ", " + numa_text(d) +
                           (d.uuid.empty() ? "" : ", " + d.uuid)));
    if (!d.errors.empty()) {
      std::string calls;
      for (const auto& e : d.errors) calls += (calls.empty() ? "" : "; ") + e;
      out.push_back(warn("gpu.query_failed", subject,
                         "NVML could not describe GPU " + std::to_string(d.index) + ": " + calls,
                         "`nvidia-smi -q -i " + std::to_string(d.index) +
                             "`; `dmesg | grep -i xid` (GPU is lost = Xid 79: drain the node and "
                             "reset or replace the GPU)"));
    }
  }
  for (const auto& e : f.errors)
    out.push_back(warn("gpu.query_failed", "NVML", "NVML call failed: " + e, kDriverFix));
  for (auto& h : judge_gpu_health(f)) out.push_back(std::move(h));
  if (nvidia_pci_gpus && f.count < on_bus)
    out.push_back(warn("gpu.count_mismatch", "NVML",
                       "the driver manages " + std::to_string(f.count) + " GPU(s) but " +
                           std::to_string(on_bus) + " NVIDIA GPU(s) are on the PCI bus",
                       "`nvidia-smi -L` vs `lspci -d 10de:`; `dmesg | grep -i 'nvrm\\|xid'` for "
                       "GPUs the driver failed to bind or that fell off the bus"));
  return out;
}

Json to_json(const GpuFacts& f) {
  auto opt = [](const auto& v) { return v ? Json(*v) : Json(nullptr); };
  Json devices = Json::array();
  for (const auto& d : f.devices)
    devices.push_back({{"index", d.index},
                       {"name", d.name},
                       {"uuid", d.uuid},
                       {"bus_id", d.bus_id},
                       {"numa_node", opt(d.numa_node)},
                       {"numa_source", d.numa_source.empty() ? Json(nullptr) : Json(d.numa_source)},
                       {"memory_bytes", opt(d.memory_bytes)},
                       {"compute_capability", opt(d.compute_capability)},
                       {"errors", d.errors},
                       {"health", to_json(d.health)}});
  return {{"source", f.source},
          {"skipped", f.skipped},
          {"nvml_loaded", f.nvml_loaded},
          {"driver_loaded", f.driver_loaded},
          {"nvml_error", opt(f.nvml_error)},
          {"driver_version", opt(f.driver_version)},
          {"cuda_driver_version", opt(f.cuda_driver_version)},
          {"count", f.count},
          {"devices", devices},
          {"errors", f.errors},
          {"cuda_visible_devices", opt(f.cuda_visible_devices)},
          {"query_ms", f.query_ms},
          {"nvml_replay", opt(f.replay)}};
}

}  // namespace fabkit::probes
