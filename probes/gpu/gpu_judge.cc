#include "probes/gpu/gpu_facts.h"

namespace fabkit::probes {

std::vector<Finding> judge_gpu(const GpuFacts& f, std::optional<int> pci_gpu_count) {
  std::vector<Finding> out;
  if (!f.built_with_cuda) {
    out.push_back(
        info("gpu.built_without_cuda", "CUDA",
             "fabcheck was built without CUDA, so GPUs are not queried through the CUDA "
             "runtime (GPUs found by PCI identity are in the locality section)",
             "rebuild with CUDA (cmake finds /usr/local/cuda or $CUDA_HOME) to query GPUs"));
    return out;
  }
  if (f.skipped)
    return {info(
        "gpu.skipped", "CUDA",
        "skipped under --sysroot: the CUDA runtime reads this machine, not the captured tree")};
  if (f.error_name) {
    const std::string& e = *f.error_name;
    bool no_gpu_here = e == "cudaErrorNoDevice" || e == "cudaErrorInsufficientDriver";
    std::string seen = "cudaGetDeviceCount failed: " + e + " (" + f.error_string.value_or("") + ")";
    if (no_gpu_here && pci_gpu_count.value_or(0) == 0) {
      out.push_back(info("gpu.none", "CUDA", seen + "; no GPU on this node"));
    } else {
      out.push_back(warn("gpu.cuda_error", "CUDA",
                         seen + (pci_gpu_count ? "; " + std::to_string(*pci_gpu_count) +
                                                     " GPU(s) are on the PCI bus"
                                               : std::string()),
                         "check `nvidia-smi`; load the driver (modprobe nvidia), match driver and "
                         "CUDA versions, and in containers run with --gpus all"));
    }
    return out;
  }
  out.push_back(info(
      "gpu.found", "CUDA",
      std::to_string(f.count) + " CUDA device(s), driver API " + f.driver.value_or("unknown")));
  if (pci_gpu_count && f.count < *pci_gpu_count) {
    std::string why = f.cuda_visible_devices ? "CUDA_VISIBLE_DEVICES=" + *f.cuda_visible_devices
                                             : std::string("CUDA_VISIBLE_DEVICES is unset");
    out.push_back(warn("gpu.count_mismatch", "CUDA",
                       "CUDA sees " + std::to_string(f.count) + " GPU(s) but " +
                           std::to_string(*pci_gpu_count) + " are on the PCI bus (" + why + ")",
                       "unset CUDA_VISIBLE_DEVICES or list every GPU; check `nvidia-smi -q | grep "
                       "-i 'retired\\|xid'` and dmesg for GPUs that fell off the bus"));
  }
  return out;
}

Json to_json(const GpuFacts& f) {
  Json devices = Json::array();
  for (const auto& d : f.devices)
    devices.push_back(
        {{"index", d.index},
         {"name", d.name},
         {"bus_id", d.bus_id},
         {"memory_bytes", d.memory_bytes},
         {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)}});
  auto opt = [](const std::optional<std::string>& s) { return s ? Json(*s) : Json(nullptr); };
  return {{"built_with_cuda", f.built_with_cuda},
          {"skipped", f.skipped},
          {"driver", opt(f.driver)},
          {"runtime", opt(f.runtime)},
          {"error", opt(f.error_name)},
          {"error_string", opt(f.error_string)},
          {"count", f.count},
          {"devices", devices},
          {"cuda_visible_devices", opt(f.cuda_visible_devices)},
          {"query_ms", f.query_ms}};
}

}  // namespace fabkit::probes
