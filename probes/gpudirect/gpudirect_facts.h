// Probe 7, GPUDirect RDMA readiness (only where GPUs and RDMA HCAs exist): the peer-memory
// module (nvidia_peermem / nv_peer_mem) or DMA-BUF support, PCIe ACS on the bridges between each
// GPU and its nearest NIC, and the IOMMU mode. Each of these silently turns GPUDirect off or
// halves it; NCCL only prints "GDR 0" or a lower bus bandwidth.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"
#include "probes/gpudirect/acs_config.h"
#include "probes/probe_context.h"
#include "topo/topology.h"

namespace fabkit::probes {

struct AcsBridge {
  std::string bus_id;  // the bridge
  std::string gpu;     // bus id of the GPU whose path crosses it
  std::string nic;     // label of the NIC at the other end
  AcsReading reading;
};

struct IommuDevice {
  std::string bus_id;
  std::optional<std::string> group_type;  // iommu_group/type: "identity" (pt), "DMA", "DMA-FQ"
};

struct GpuDirectFacts {
  bool applicable = false;
  std::string reason;  // why not applicable
  int gpu_count = 0;
  int hca_count = 0;
  bool modules_readable = false;                   // <proc>/modules could be read
  std::vector<std::string> peer_modules;           // loaded: nvidia_peermem and/or nv_peer_mem
  std::optional<std::string> nvidia_version_line;  // first line of <proc>/driver/nvidia/version
  std::optional<std::string> kernel_release;       // <proc>/sys/kernel/osrelease
  std::vector<AcsBridge> acs;
  std::vector<std::string> iommu_units;    // <sys>/class/iommu entries (dmar0, ivhd0)
  std::vector<IommuDevice> iommu_devices;  // the GPUs and NICs
  std::optional<std::string> cmdline;      // <proc>/cmdline
};

// topology: from the locality probe (nullptr when it was skipped/failed); rdma_device_count: this
// node's RDMA devices from the rdma probe (0 when unknown; hwloc's OpenFabrics devices count too).
GpuDirectFacts gather_gpudirect(const ProbeContext& ctx, const topo::Topology* topology,
                                size_t rdma_device_count);
std::vector<Finding> judge_gpudirect(const GpuDirectFacts& facts);
Json to_json(const GpuDirectFacts& facts);

// Pure helpers, exposed for tests.
struct NvidiaDriver {
  std::optional<int> major;
  bool open_kernel_module = false;  // "NVIDIA UNIX Open Kernel Module": DMA-BUF needs it
};
NvidiaDriver parse_nvidia_version(const std::string& line);
std::optional<std::pair<int, int>> parse_kernel_version(const std::string& release);  // 5.15.0-x
// DMA-BUF GPUDirect (NCCL >= 2.19 without nvidia_peermem): kernel >= 5.12 and the open NVIDIA
// kernel module >= 515. nullopt when the driver or kernel version is unknown.
std::optional<bool> dmabuf_possible(const GpuDirectFacts& f);
// "passthrough" (iommu=pt / identity groups), "translated" (DMA groups), "off", "unknown".
std::string iommu_mode(const GpuDirectFacts& f);

}  // namespace fabkit::probes
