// Runs one pipeline stage's schedule (pipeline_schedule.h) for one optimizer step: forwards and
// backwards on this stage's ShardedModel (sharded over the stage's data-parallel replicas), and
// the activations and their gradients to and from the neighbouring stages of the same replica
// over the world comm's send/recv, in the schedule's order (so no rank waits forever; each
// transfer is bounded by the comm's collective timeout).
//
// On the wire activations and gradients are fp32 whatever the compute dtype: Comm moves floats,
// and bf16/fp16 -> fp32 -> bf16/fp16 is exact. Tensors stay on the model's device (a GPU's
// buffers go to the NCCL comm as device pointers).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "trainer/distributed/comm.h"
#include "trainer/parallel/pipeline_schedule.h"
#include "trainer/parallel/sharded_model.h"

namespace fabkit::trainer {

struct PipelineStepStats {
  int64_t bytes_sent = 0;             // activations + gradients this rank sent to its neighbours
  int peak_in_flight = 0;             // micro-batches whose activations were held at once (peak)
  // Memory in use above the step's start, peak after a forward (the activations held): on a GPU
  // the caching allocator's allocated device bytes; on CPU the host heap (mallinfo2).
  int64_t activation_bytes_peak = 0;
  // Time the compute waited for received tensors (the bubble, measured). CPU: the host blocked
  // in the receive. GPU: NCCL's wait only makes the compute stream wait, so the host timer would
  // read ~0; CUDA events on the compute stream before the receive and after its wait time how
  // long the stream itself stood still, read when the figures are asked for.
  double recv_wait_ms = 0;
};

class PipelineRunner {
 public:
  // world: the comm whose ranks are prev_rank / next_rank (-1: none, the first / last stage).
  PipelineRunner(Comm& world, ShardedModel& model, int stage, int stages, int prev_rank,
                 int next_rank, PipeSchedule kind, int micro_batches, at::ScalarType compute_dtype);
  ~PipelineRunner();

  // One step. load(mb) fills the micro-batch the stages read (batch inputs, labels, normalizer)
  // before its forward; activation_shape(mb) is the shape of the tensor between stages ([B,T,H]).
  // Returns this stage's share of the loss: the sum of the micro-batches' losses on the last
  // stage, 0 elsewhere, as a double scalar on the model's device (not read back: no host sync).
  // loss_scale starts the backward (fp16).
  at::Tensor run_step(const std::function<void(int)>& load,
                      const std::function<std::vector<int64_t>(int)>& activation_shape,
                      double loss_scale);
  // Validation: n micro-batches forward only, each handed on as soon as it is computed (a chain,
  // so the blocking transfers cannot wait on each other). Returns the last stage's summed values.
  double run_forward_only(int n, const std::function<void(int)>& load,
                          const std::function<std::vector<int64_t>(int)>& activation_shape);
  // The last step's figures; on a GPU this reads the receive timers (a host sync: log steps only).
  const PipelineStepStats& stats();
  const std::vector<PipeAction>& actions() const { return actions_; }

 private:
  at::Tensor recv_tensor(const std::vector<int64_t>& shape, int src, int tag);
  void send_tensor(const at::Tensor& t, int dst, int tag);

  Comm& world_;
  ShardedModel& model_;
  int stage_, stages_, prev_rank_, next_rank_, micro_batches_;
  at::ScalarType compute_dtype_;
  std::vector<PipeAction> actions_;
  PipelineStepStats stats_;
  int64_t memory_in_use() const;
  struct DeviceTimers;  // CUDA: event pairs around the step's receives (pipeline_runner.cc)
  std::unique_ptr<DeviceTimers> timers_;
};

}  // namespace fabkit::trainer
