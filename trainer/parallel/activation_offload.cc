#include "trainer/parallel/activation_offload.h"

#include <ATen/ATen.h>

#include "common/errors.h"

namespace fabkit::trainer {

ActivationOffloader::ActivationOffloader(at::Device device)
    : ActivationOffloader(device, device.is_cuda() ? make_cuda_offload_streams(device) : nullptr) {
  FABKIT_ENFORCE(device_.is_cpu() || streams_,
                 "activation offload: a CUDA device in a build without CUDA");
}

ActivationOffloader::ActivationOffloader(at::Device device, std::unique_ptr<OffloadStreams> streams)
    : device_(device), streams_(std::move(streams)) {}

ActivationOffloader::~ActivationOffloader() = default;

bool ActivationOffloader::on_side_stream() const { return streams_ != nullptr; }

OffloadedTensor ActivationOffloader::offload(const at::Tensor& x) {
  OffloadedTensor t;
  if (streams_) {
    OffloadStreams& s = *streams_;
    t.host = s.pinned_host_like(x);
    // The side stream starts once the compute stream has produced x.
    s.side_waits(s.record_on_compute());
    s.copy_on_side(t.host, x);
    // x was made on the compute stream; the caller drops it now: its memory must not be handed
    // out again before the side stream has read it.
    s.side_uses(x);
    t.copied_out = s.record_on_side();
    return t;
  }
  // CPU: a separate host copy, as on a GPU (the memory it frees is the caller's to drop).
  t.host = x.detach().clone();
  return t;
}

void ActivationOffloader::prefetch(OffloadedTensor& t) {
  if (t.prefetched || !t.defined()) return;
  t.prefetched = true;
  if (streams_) {
    OffloadStreams& s = *streams_;
    t.device = s.device_like(t.host);
    // The buffer is the compute stream's memory: kernels queued there before this point may still
    // use it (freed by the host, not yet by them). record_stream cannot help: it only delays a
    // free, and this block was already free. The side stream writes it after them.
    s.side_waits(s.record_on_compute());
    s.side_uses(t.device);
    // Same stream as the copy out: in order after it.
    s.copy_on_side(t.device, t.host);
    t.copied_in = s.record_on_side();
    return;
  }
  t.device = at::empty(t.host.sizes(), t.host.options().device(device_));
  t.device.copy_(t.host);
}

at::Tensor ActivationOffloader::restore(OffloadedTensor& t) {
  if (!t.defined()) return at::Tensor();
  prefetch(t);
  if (streams_) {
    streams_->compute_waits(t.copied_in);
    // The host buffer can go once the copy back finished: the side stream's event is recorded
    // after it, and the pinned allocator frees a block only after the events of its last use.
    t.host = at::Tensor();
  }
  at::Tensor out = t.device;
  t = OffloadedTensor();
  return out;
}

}  // namespace fabkit::trainer
