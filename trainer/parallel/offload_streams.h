// The stream operations ActivationOffloader orders its copies with: a seam, so the ordering rules
// (activation_offload.h) can be checked on a machine without a GPU by a fake that runs two
// "streams" as queues and lets the side one run as far ahead as the events allow.
//
// The CUDA implementation (offload_streams.cc) maps each call to one CUDA stream operation:
// events are at::cuda::CUDAEvent, the side stream comes from the pool, "compute" is the device's
// current stream when the call is made.
#pragma once

#include <memory>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace fabkit::trainer {

class OffloadStreams {
 public:
  using Event = std::shared_ptr<void>;
  virtual ~OffloadStreams() = default;

  // An event at the current end of the compute (or side) stream's queue.
  virtual Event record_on_compute() = 0;
  virtual Event record_on_side() = 0;
  // The side (or compute) stream runs nothing queued after this until `e` has happened.
  virtual void side_waits(const Event& e) = 0;
  virtual void compute_waits(const Event& e) = 0;
  // Page-locked host memory shaped as x (the copy out's destination).
  virtual at::Tensor pinned_host_like(const at::Tensor& x) = 0;
  // Device memory shaped as `host`, from the compute stream's pool: memory that kernels still
  // queued on the compute stream may have used until just now (the host freed it, they did not).
  virtual at::Tensor device_like(const at::Tensor& host) = 0;
  // dst <- src, queued on the side stream (the host does not wait).
  virtual void copy_on_side(at::Tensor& dst, const at::Tensor& src) = 0;
  // Tells the allocator the side stream uses t's memory: freed, it is not handed out again until
  // the side stream's work queued so far is done.
  virtual void side_uses(const at::Tensor& t) = 0;
};

// The side stream of CUDA device `device`; nullptr in a build without CUDA (the caller says so).
std::unique_ptr<OffloadStreams> make_cuda_offload_streams(at::Device device);

}  // namespace fabkit::trainer
