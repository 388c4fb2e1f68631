// Probe 8, GPUs through the CUDA runtime (when built with CUDA): count, names, PCI bus ids, memory.
// On a CPU node the runtime answers "no driver"/"no device", which is a fact, not a failure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"
#include "probes/probe_context.h"

namespace fabkit::probes {

struct CudaDevice {
  int index = 0;
  std::string name;
  std::string bus_id;  // normalised "dddd:bb:dd.f"
  uint64_t memory_bytes = 0;
  int cc_major = 0, cc_minor = 0;
};

struct GpuFacts {
  bool built_with_cuda = false;
  bool skipped = false;                   // under --sysroot: CUDA would describe this machine
  std::optional<std::string> driver;      // CUDA driver API version "12.4"; null without driver
  std::optional<std::string> runtime;     // cudart version linked in
  std::optional<std::string> error_name;  // cudaGetDeviceCount's error, e.g. cudaErrorNoDevice
  std::optional<std::string> error_string;
  int count = 0;
  std::vector<CudaDevice> devices;
  std::optional<std::string> cuda_visible_devices;  // from the environment snapshot
  double query_ms = 0;
};

GpuFacts gather_gpu(const ProbeContext& ctx);
// Pure. pci_gpu_count: GPUs the locality probe found by PCI identity (nullopt: unknown).
std::vector<Finding> judge_gpu(const GpuFacts& facts, std::optional<int> pci_gpu_count);
Json to_json(const GpuFacts& facts);

}  // namespace fabkit::probes
