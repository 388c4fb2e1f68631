// Runs one pipeline stage's schedule (pipeline_schedule.h) for one optimizer step: forwards and
// backwards on this stage's ShardedModel (sharded over the stage's data-parallel replicas), and
// the activations and their gradients to and from the neighbouring stages of the same replica
// over the world comm's send/recv, in the schedule's order (so no rank waits forever; each
// transfer is bounded by the comm's collective timeout). Sends are posted without waiting
// (Comm::send_async), as Megatron posts isend: the lists are valid when every send blocks until
// its receive (the strictest backend), and a send that completes later than it was posted only
// lets the sender go on sooner, so no order the lists allow can deadlock.
//
// On the wire activations and gradients are fp32 whatever the compute dtype: Comm moves floats,
// and bf16/fp16 -> fp32 -> bf16/fp16 is exact. Tensors stay on the model's device (a GPU's
// buffers go to the NCCL comm as device pointers).
#pragma once

#include <cstdint>
#include <deque>
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
  int peak_in_flight = 0;             // micro-batch chunks whose activations were held at once
  // Memory in use above the step's start, peak after any computation (the activations held, and
  // a split backward's deferred weight-gradient inputs): on a GPU the caching allocator's
  // allocated device bytes; on CPU the host heap (mallinfo2).
  int64_t activation_bytes_peak = 0;
  // Time the compute waited for received tensors. CPU: the host blocked in the receive. GPU: NCCL's
  // wait only makes the compute stream wait, so the host timer would read ~0; CUDA events on the
  // compute stream before the receive and after its wait time how long the stream itself stood
  // still, read when the figures are asked for.
  double recv_wait_ms = 0;
  // The measured bubble's parts: the time this rank computed (forwards, backwards, weight passes)
  // and the whole pipeline part of the step, from its first action to its last (CPU: host clock;
  // GPU: events on the compute stream). idle = 1 - compute / span.
  double compute_ms = 0;
  double span_ms = 0;
};

class PipelineRunner {
 public:
  // world: the comm the stages' ranks are in; the pipeline rank p (0..P-1) of this rank's replica
  // is world rank p * replicas + replica. model: this rank's chunks (ShardedModel::set_chunks when
  // the schedule has several per rank). The schedule is generated and validated here (a list that
  // could deadlock is refused before anything runs).
  PipelineRunner(Comm& world, ShardedModel& model, int rank, int replicas, int replica,
                 PipeSchedule kind, const PipeShape& shape, at::ScalarType compute_dtype);
  ~PipelineRunner();

  // One step. load(mb) fills the micro-batch the stages read (batch inputs, labels, normalizer)
  // before each forward of it; activation_shape(mb) is the shape of the tensor between stages
  // ([B,T,H]). Returns this rank's share of the loss: the sum of the micro-batches' losses on the
  // rank with the last virtual stage, 0 elsewhere, as a double scalar on the model's device (not
  // read back: no host sync). loss_scale starts the backward (fp16).
  at::Tensor run_step(const std::function<void(int)>& load,
                      const std::function<std::vector<int64_t>(int)>& activation_shape,
                      double loss_scale);
  // Validation: n micro-batches forward only, each handed on as soon as it is computed (a chain
  // through every virtual stage, so the blocking transfers cannot wait on each other). Returns
  // the last virtual stage's summed values.
  double run_forward_only(int n, const std::function<void(int)>& load,
                          const std::function<std::vector<int64_t>(int)>& activation_shape);
  // The last step's figures; on a GPU this reads the timers (a host sync: log steps only).
  const PipelineStepStats& stats();
  const std::vector<PipeAction>& actions() const { return actions_; }
  const PipeShape& shape() const { return shape_; }
  // Whether this rank runs the last virtual stage (the loss).
  bool holds_loss() const;

 private:
  at::Tensor recv_tensor(const std::vector<int64_t>& shape, int src, int tag);
  // Posts the send (Comm::send_async) and goes on. list_index: the send's place in actions_.
  // retire_sends(i) at the list's send i waits for the oldest sends the list has reached while
  // more than kSendsInFlight of them are pending; finish_sends waits for all (end of the step).
  void send_tensor(const at::Tensor& t, int dst, int tag, size_t list_index);
  void retire_sends(size_t list_index);
  void finish_sends();
  static constexpr size_t kSendsInFlight = 8;
  struct PendingSend {
    at::Tensor wire;  // the fp32 buffer the backend reads until the send completes
    CommRequestPtr request;
    size_t list_index = 0;
  };
  std::deque<PendingSend> sends_;
  std::vector<int> early_send_;  // per action: the list index of its output's send, or -1
  int world_rank(int pipeline_rank) const { return pipeline_rank * replicas_ + replica_; }
  void note_memory(int64_t base);

  Comm& world_;
  ShardedModel& model_;
  int rank_, replicas_, replica_;
  PipeSchedule kind_;
  PipeShape shape_;
  at::ScalarType compute_dtype_;
  std::vector<PipeAction> actions_;
  PipelineStepStats stats_;
  int64_t memory_in_use() const;
  struct DeviceTimers;  // CUDA: event pairs around the step's receives (pipeline_runner.cc)
  std::unique_ptr<DeviceTimers> timers_;
};

}  // namespace fabkit::trainer
