#include "trainer/parallel/offload_streams.h"

#include <ATen/ATen.h>

#if FABKIT_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace fabkit::trainer {

#if FABKIT_TORCH_CUDA
namespace {

class CudaOffloadStreams : public OffloadStreams {
 public:
  explicit CudaOffloadStreams(at::Device device)
      : device_(device),
        side_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index())) {}

  Event record_on_compute() override { return record(compute()); }
  Event record_on_side() override { return record(side_); }
  void side_waits(const Event& e) override { event(e)->block(side_); }
  void compute_waits(const Event& e) override { event(e)->block(compute()); }
  at::Tensor pinned_host_like(const at::Tensor& x) override {
    return at::empty(x.sizes(), x.options().device(at::kCPU).pinned_memory(true));
  }
  at::Tensor device_like(const at::Tensor& host) override {
    // Allocated while the compute stream is current: from its pool.
    return at::empty(host.sizes(), host.options().device(device_).pinned_memory(false));
  }
  void copy_on_side(at::Tensor& dst, const at::Tensor& src) override {
    const c10::cuda::CUDAStreamGuard guard(side_);
    dst.copy_(src, /*non_blocking=*/true);
  }
  void side_uses(const at::Tensor& t) override {
    c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), side_);
  }

 private:
  c10::cuda::CUDAStream compute() const { return c10::cuda::getCurrentCUDAStream(device_.index()); }
  static Event record(const c10::cuda::CUDAStream& s) {
    auto e = std::make_shared<at::cuda::CUDAEvent>();
    e->record(s);
    return e;
  }
  static at::cuda::CUDAEvent* event(const Event& e) {
    return static_cast<at::cuda::CUDAEvent*>(e.get());
  }

  at::Device device_;
  c10::cuda::CUDAStream side_;
};

}  // namespace

std::unique_ptr<OffloadStreams> make_cuda_offload_streams(at::Device device) {
  return std::make_unique<CudaOffloadStreams>(device);
}
#else
std::unique_ptr<OffloadStreams> make_cuda_offload_streams(at::Device) { return nullptr; }
#endif

}  // namespace fabkit::trainer
