#include "trainer/app/device_setup.h"

#include <torch/cuda.h>

#include <cstdio>
#include <cstdlib>

#include "common/errors.h"

#if FABKIT_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#endif

namespace fabkit::trainer {

std::vector<VisibleGpu> visible_cuda_devices() {
  std::vector<VisibleGpu> out;
#if FABKIT_TORCH_CUDA
  // Device properties come from the runtime without a context; no kernel runs here.
  const int n = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  for (int i = 0; i < n; ++i) {
    char bus[32] = {0};
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), i) != cudaSuccess) {
      cudaGetLastError();
      bus[0] = '\0';
    }
    out.push_back({i, bus});
  }
#endif
  return out;
}

void synchronize_device(const TrainDevice& d) {
  if (d.cuda) torch::cuda::synchronize(static_cast<int64_t>(d.index));
}

int64_t cuda_peak_allocated_bytes(const TrainDevice& d) {
#if FABKIT_TORCH_CUDA
  if (!d.cuda) return 0;
  const auto stats =
      c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(d.index));
  return stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)]
      .peak;
#else
  return 0;
#endif
}

TrainDevice choose_train_device(const std::string& device_flag, const LaunchEnv& launch,
                                const std::vector<GpuNicLocality>& locality) {
  TrainDevice d;
  if (device_flag == "cpu") {
    d.reason = "--device cpu";
    return d;
  }
  const std::vector<VisibleGpu> visible = visible_cuda_devices();
  if (visible.empty()) {
    if (device_flag == "cuda") {
      const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
      throw UsageError(
          std::string("--device cuda: no CUDA device is visible to this process (") +
#if FABKIT_TORCH_CUDA
          "driver or GPU absent" +
#else
          "this fabtrain's LibTorch has no CUDA" +
#endif
          (cvd ? std::string(", CUDA_VISIBLE_DEVICES='") + cvd + "'" : std::string()) +
          ") -- run on a GPU node, fix CUDA_VISIBLE_DEVICES, or train on CPU with --device cpu");
    }
    d.reason = "no CUDA device visible (--device auto)";
    return d;
  }
  const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
  const DeviceChoice c =
      choose_cuda_device(launch.local_rank, launch.local_world_size, visible, locality,
                         cvd ? std::optional<std::string>(cvd) : std::nullopt);
  d.cuda = true;
  d.index = c.index;
  d.bus_id = c.bus_id;
  d.reason = c.reason;
  return d;
}

}  // namespace fabkit::trainer
