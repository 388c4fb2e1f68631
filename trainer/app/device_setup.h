// Section 3 of a fabtrain run: where this rank computes. `--device auto|cpu|cuda`: auto takes a
// GPU when this LibTorch sees one. The GPU is chosen from the profile's GPU<->NIC locality for
// this host (distributed/device_choice.h), among the devices CUDA_VISIBLE_DEVICES leaves visible.
#pragma once

#include <string>
#include <vector>

#include <c10/core/Device.h>

#include "trainer/distributed/device_choice.h"
#include "trainer/distributed/launch_env.h"

namespace fabkit::trainer {

struct TrainDevice {
  bool cuda = false;
  int index = -1;  // CUDA device index (visible numbering); -1 on CPU
  std::string bus_id;
  std::string reason;
  c10::Device device() const {
    return cuda ? c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index))
                : c10::Device(c10::kCPU);
  }
};

// The CUDA devices this process sees, with their PCI bus ids (empty without CUDA).
std::vector<VisibleGpu> visible_cuda_devices();

// Throws UsageError for --device cuda without a usable GPU (naming what was found), or for more
// local ranks than visible GPUs.
// The caching allocator's peak of allocated bytes on the rank's GPU since the start (0 on CPU).
int64_t cuda_peak_allocated_bytes(const TrainDevice& d);

// Waits until every kernel and copy queued on the rank's GPU, on any stream, has run
// (cudaDeviceSynchronize); on the CPU the work is done when a call returns: nothing to wait for.
void synchronize_device(const TrainDevice& d);

TrainDevice choose_train_device(const std::string& device_flag, const LaunchEnv& launch,
                                const std::vector<GpuNicLocality>& locality);

}  // namespace fabkit::trainer
