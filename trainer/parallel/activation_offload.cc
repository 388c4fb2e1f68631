#include "trainer/parallel/activation_offload.h"

#include <ATen/ATen.h>

#include "common/errors.h"

#if FABKIT_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace fabkit::trainer {

#if FABKIT_TORCH_CUDA
struct ActivationOffloader::Cuda {
  c10::cuda::CUDAStream side;
};

namespace {

std::shared_ptr<void> record_on(const c10::cuda::CUDAStream& s) {
  auto e = std::make_shared<at::cuda::CUDAEvent>();
  e->record(s);
  return e;
}

void wait_for(const std::shared_ptr<void>& event, const c10::cuda::CUDAStream& s) {
  static_cast<at::cuda::CUDAEvent*>(event.get())->block(s);
}

}  // namespace
#else
struct ActivationOffloader::Cuda {};
#endif

ActivationOffloader::ActivationOffloader(at::Device device) : device_(device) {
#if FABKIT_TORCH_CUDA
  if (device_.is_cuda()) {
    cuda_ = std::make_unique<Cuda>(
        Cuda{c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device_.index())});
  }
#endif
  FABKIT_ENFORCE(device_.is_cpu() || cuda_,
                 "activation offload: a CUDA device in a build without CUDA");
}

ActivationOffloader::~ActivationOffloader() = default;

bool ActivationOffloader::on_side_stream() const { return cuda_ != nullptr; }

OffloadedTensor ActivationOffloader::offload(const at::Tensor& x) {
  OffloadedTensor t;
#if FABKIT_TORCH_CUDA
  if (cuda_) {
    const c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(device_.index());
    t.host = at::empty(x.sizes(), x.options().device(at::kCPU).pinned_memory(true));
    // The side stream starts once the compute stream has produced x.
    wait_for(record_on(compute), cuda_->side);
    {
      c10::cuda::CUDAStreamGuard guard(cuda_->side);
      t.host.copy_(x, /*non_blocking=*/true);
    }
    // x was made on the compute stream; the caller drops it now: its memory must not be handed
    // out again before the side stream has read it.
    c10::cuda::CUDACachingAllocator::recordStream(x.storage().data_ptr(), cuda_->side);
    t.copied_out = record_on(cuda_->side);
    return t;
  }
#endif
  // CPU: a separate host copy, as on a GPU (the memory it frees is the caller's to drop).
  t.host = x.detach().clone();
  return t;
}

void ActivationOffloader::prefetch(OffloadedTensor& t) {
  if (t.prefetched || !t.defined()) return;
  t.prefetched = true;
#if FABKIT_TORCH_CUDA
  if (cuda_) {
    // Allocated for the compute stream, which uses it; the side stream writes it first.
    t.device = at::empty(t.host.sizes(), t.host.options().device(device_).pinned_memory(false));
    c10::cuda::CUDACachingAllocator::recordStream(t.device.storage().data_ptr(), cuda_->side);
    {
      c10::cuda::CUDAStreamGuard guard(cuda_->side);
      // Same stream as the copy out: in order after it.
      t.device.copy_(t.host, /*non_blocking=*/true);
    }
    t.copied_in = record_on(cuda_->side);
    return;
  }
#endif
  t.device = at::empty(t.host.sizes(), t.host.options().device(device_));
  t.device.copy_(t.host);
}

at::Tensor ActivationOffloader::restore(OffloadedTensor& t) {
  if (!t.defined()) return at::Tensor();
  prefetch(t);
#if FABKIT_TORCH_CUDA
  if (cuda_) {
    wait_for(t.copied_in, c10::cuda::getCurrentCUDAStream(device_.index()));
    // The host buffer can go once the copy back finished: the side stream's event is recorded
    // after it, and the pinned allocator frees a block only after the events of its last use.
    t.host = at::Tensor();
  }
#endif
  at::Tensor out = t.device;
  t = OffloadedTensor();
  return out;
}

}  // namespace fabkit::trainer
