// Which CUDA device a local rank trains on. Pure: the visible devices (CUDA's order, which
// already honours CUDA_VISIBLE_DEVICES) and the profile's GPU<->NIC locality for this host in,
// a device index and the reason out.
//
// With as many local ranks as visible GPUs every GPU is used and NCCL picks each GPU's NIC
// itself, so local rank r takes device r. With fewer ranks than GPUs (4 ranks on an 8-GPU node,
// one rank for a smoke test), LOCAL_RANK would pile the ranks onto the GPUs behind the first
// NIC(s); the profile knows better: take, round-robin over the NICs, each NIC's nearest GPUs
// (NCCL path level PIX < PXB < PHB < NODE < SYS), so the ranks' traffic spreads over the rails.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace fabkit::trainer {

struct VisibleGpu {
  int index = 0;       // CUDA device index among the visible devices
  std::string bus_id;  // PCI bus id; any case, 4- or 8-digit domain
};

struct GpuNicLocality {  // one row of the profile's per-host "locality"
  std::string gpu_bus_id;
  std::optional<std::string> nearest_nic;
  std::optional<std::string> path_level;  // PIX, PXB, PHB, NODE, SYS
};

struct DeviceChoice {
  int index = 0;
  std::string bus_id;
  std::string reason;
};

// "0000:3b:00.0" from "00000000:3B:00.0", "0000:3b:00.0", "3b:00.0".
std::string normalize_bus_id(const std::string& bus_id);

// Throws UsageError when there are more local ranks than visible GPUs (naming both counts).
DeviceChoice choose_cuda_device(int local_rank, int local_world_size,
                                const std::vector<VisibleGpu>& visible,
                                const std::vector<GpuNicLocality>& locality);

}  // namespace fabkit::trainer
