// How a micro-batch's host tensors reach the model's device.
//
// A plain .to(cuda) from pageable host memory is a synchronous copy: CUDA stages it through a
// driver buffer and the host waits for the stream, i.e. for every kernel queued before it, once
// per tensor of every micro-batch, so the host never ran ahead of the GPU by more than one
// micro-batch. From page-locked memory the copy is queued on the current stream
// (non_blocking) and the host goes on: the stream orders it before the micro-batch's kernels.
//
// The page-locked copy comes from LibTorch's caching host allocator; the copy records an event
// on the stream for its block, and the block is handed out again (to a later micro-batch, the
// next step) only after that event: a later batch never overwrites memory a queued copy still
// reads. On CPU nothing is pinned or copied (the tensor is used as it is, as before).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace fabkit::trainer {

struct BatchCopy {
  bool pin = false;           // stage the host tensor in page-locked memory
  bool non_blocking = false;  // queue the copy on the current stream; the host does not wait
};

// CUDA: pinned and non-blocking; any other device: neither (pinning needs a CUDA runtime).
BatchCopy batch_copy_for(const at::Device& device);

// `host` on `device` the way `how` says.
at::Tensor copy_to_device(const at::Tensor& host, const at::Device& device, const BatchCopy& how);

}  // namespace fabkit::trainer
