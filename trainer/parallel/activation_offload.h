// --offload-activations: a stage's checkpointed input (recompute keeps only that) waits in host
// memory between its forward and its backward. On a GPU the copies run on a side stream of their
// own, ordered against the compute stream by events, so they overlap the compute instead of
// sitting in its queue:
//   offload:  compute --event--> side: device -> pinned host copy
//   prefetch: compute --event--> side: pinned host -> device copy (issued one stage ahead of the
//             recompute)
//   restore:  compute waits for the prefetch's event, then uses the tensor
// The prefetch's event is needed because its device buffer comes from the compute stream's pool:
// the allocator hands out memory the host freed while kernels queued on the compute stream may
// still read or write it, and nothing else keeps the side stream's copy from landing first.
// The allocator is told which stream uses each buffer (record_stream), so a buffer freed on one
// stream is not reused while the other still copies it. On CPU the same calls run in order on the
// calling thread: a separate host copy out, a copy back in (nothing to overlap, same code path).
#pragma once

#include <memory>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "trainer/parallel/offload_streams.h"

namespace fabkit::trainer {

// One offloaded tensor between its offload and its restore.
struct OffloadedTensor {
  at::Tensor host;    // the host copy (pinned on CUDA)
  at::Tensor device;  // the copy back, once prefetched
  bool prefetched = false;
  // Side stream only: the events that say the copy out / the copy back has finished there.
  OffloadStreams::Event copied_out, copied_in;
  bool defined() const { return host.defined(); }
};

class ActivationOffloader {
 public:
  explicit ActivationOffloader(at::Device device);
  // The copies ordered through `streams` (a test's fake; CUDA's is made by the constructor above).
  ActivationOffloader(at::Device device, std::unique_ptr<OffloadStreams> streams);
  ~ActivationOffloader();
  ActivationOffloader(const ActivationOffloader&) = delete;
  ActivationOffloader& operator=(const ActivationOffloader&) = delete;

  // Starts the copy of x (after the compute stream's work that produced it) to host memory.
  OffloadedTensor offload(const at::Tensor& x);
  // Starts the copy back to the device (on the side stream); idempotent.
  void prefetch(OffloadedTensor& t);
  // The tensor on the device, usable on the compute stream (prefetches first when not yet done).
  at::Tensor restore(OffloadedTensor& t);
  // Whether the copies run on a stream of their own (CUDA) or in order on the caller (CPU).
  bool on_side_stream() const;

 private:
  at::Device device_;
  std::unique_ptr<OffloadStreams> streams_;  // null: in order on the caller (CPU)
};

}  // namespace fabkit::trainer
