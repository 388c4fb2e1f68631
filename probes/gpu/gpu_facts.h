// Probe 8, GPUs through NVML (libnvidia-ml.so.1, loaded at run time): name, UUID, PCI bus id,
// NUMA node, memory and compute capability per GPU, the driver version and the CUDA driver API
// version. NVML creates no CUDA context (cuInit costs ~200 ms on an H100 node, NVML ~20 ms), so
// the default path never touches the CUDA runtime. No NVML library, or a driver that is not
// loaded, is a fact ("no NVIDIA driver"), not a failure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"
#include "probes/gpu/gpu_health_facts.h"
#include "probes/gpu/nvml_api.h"
#include "probes/probe_context.h"

namespace fabkit::probes {

struct GpuDevice {
  int index = 0;  // NVML index (PCI order; CUDA's default order may differ: CUDA_DEVICE_ORDER)
  std::string name;
  std::string uuid;
  std::string bus_id;                  // normalised "dddd:bb:dd.f" (sysfs/NCCL form)
  std::optional<int> numa_node;        // null: unknown or not local to one node
  std::string numa_source;             // "nvml", "sysfs", or "" when unknown
  std::optional<uint64_t> memory_bytes;
  std::optional<std::string> compute_capability;  // "9.0"
  std::vector<std::string> errors;     // NVML calls that failed for this GPU, each named
  std::map<std::string, int> error_codes;  // the same by call: NVML's return code
  GpuHealth health;                        // gpu_health_facts.h
};

struct GpuFacts {
  std::string source = "nvml";
  bool skipped = false;                  // under --sysroot: NVML would describe this machine
  bool nvml_loaded = false;              // libnvidia-ml.so.1 opened with every entry point
  std::optional<std::string> nvml_error; // why not: dlopen/dlsym message, or nvmlInit_v2's error
  std::optional<int> nvml_init_code;     // nvmlInit_v2's return when it failed
  bool driver_loaded = false;            // nvmlInit_v2 succeeded
  std::optional<std::string> driver_version;       // "580.95.05"
  std::optional<std::string> cuda_driver_version;  // CUDA driver API the driver supports, "13.0"
  int count = 0;
  std::vector<GpuDevice> devices;
  std::vector<std::string> errors;       // node-level NVML calls that failed, each named
  std::optional<std::string> cuda_visible_devices;  // from the environment snapshot
  double query_ms = 0;                   // wall time of load + init + queries + shutdown
  std::optional<std::string> replay;     // --nvml-replay FILE: NVML answers recorded elsewhere
};

// Loads the real NVML (nvml::load_library) unless under --sysroot; with --nvml-replay FILE
// (ctx.options.nvml_replay) the recorded answers in FILE stand in for NVML, also under --sysroot.
// Throws std::invalid_argument naming the file and field of a malformed replay file.
GpuFacts gather_gpu(const ProbeContext& ctx);
// The same through a given library (the fake in tests). Reads the sysfs numa_node under
// ctx.roots when NVML cannot say, and names the processes on a GPU from ctx.roots.proc unless
// name_processes is false (answers recorded on another machine: its PIDs are not ours).
GpuFacts gather_gpu(const ProbeContext& ctx, const nvml::Library& lib, bool name_processes = true);
// The health queries of one GPU (gpu_health_gather.cc), after its inventory.
void gather_gpu_health(const ProbeContext& ctx, const nvml::Table& t, nvml::Device h,
                       bool name_processes, GpuDevice& d);
// The recorded answers of this machine's NVML in the fixture format nvml_fake.h reads
// (`fabcheck node --nvml-record FILE`): the same facts, replayable with --nvml-replay.
Json nvml_fixture_from_facts(const GpuFacts& facts);
// Pure. nvidia_pci_gpus: NVIDIA GPUs the locality probe found by PCI identity (nullopt: unknown).
std::vector<Finding> judge_gpu(const GpuFacts& facts, std::optional<int> nvidia_pci_gpus);
// Pure: the health findings of every GPU (gpu_health_judge.cc); judge_gpu includes them.
std::vector<Finding> judge_gpu_health(const GpuFacts& facts);
Json to_json(const GpuFacts& facts);

}  // namespace fabkit::probes
