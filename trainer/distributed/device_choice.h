// Which CUDA device a local rank trains on. Pure: the visible devices (CUDA's order, which
// already honours CUDA_VISIBLE_DEVICES) and the profile's GPU<->NIC locality for this host in,
// a device index and the reason out.
//
// With as many local ranks as visible GPUs every GPU is used and NCCL picks each GPU's NIC
// itself, so local rank r takes device r. With fewer ranks than GPUs (4 ranks on an 8-GPU node,
// one rank for a smoke test), LOCAL_RANK would pile the ranks onto the GPUs behind the first
// NIC(s); the profile knows better: take, round-robin over the NICs, each NIC's nearest GPUs
// (NCCL path level PIX < PXB < PHB < NODE < SYS), so the ranks' traffic spreads over the rails.
//
// With exactly one visible GPU and several local ranks, each task was given its own GPU (srun
// --gpus-per-task=1, --gpu-bind=single:1 or map_gpu:..., a cgroup-constrained GRES): every rank
// takes its one GPU. Between 1 and the local world size there is no sound guess, and when
// CUDA_VISIBLE_DEVICES lists more devices than CUDA enumerates, an entry did not resolve (CUDA
// hides every entry from the first it cannot resolve on): both stop with the counts and the fix.
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

// CUDA_VISIBLE_DEVICES split at commas, blanks trimmed: indices ("3"), GPU UUIDs ("GPU-8f3e...",
// possibly abbreviated), MIG devices ("MIG-<uuid>", "MIG-GPU-<uuid>/<gi>/<ci>"). Empty: none.
std::vector<std::string> cuda_visible_entries(const std::string& value);

// Throws UsageError when the local ranks cannot each get a GPU of their own: more local ranks than
// visible GPUs (and not exactly one), or CUDA_VISIBLE_DEVICES (when set: cuda_visible_devices)
// listing more devices than CUDA enumerates. The message names the counts, the variable and the
// fix.
DeviceChoice choose_cuda_device(
    int local_rank, int local_world_size, const std::vector<VisibleGpu>& visible,
    const std::vector<GpuNicLocality>& locality,
    const std::optional<std::string>& cuda_visible_devices = std::nullopt);

}  // namespace fabkit::trainer
