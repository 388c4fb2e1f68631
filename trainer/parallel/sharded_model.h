// FSDP-style execution over units: each unit's parameters live only as this rank's flat shard
// (flat_shard.h); a unit's full parameters exist only while one of its stages runs.
//
// A *unit* is a set of parameters sharded together (one decoder layer; the embedding + final norm
// + head). A *stage* is one piece of the forward that uses one unit: embed, each layer, head+loss.
// A unit may serve several stages (tied embeddings: the embedding matrix is also the head).
//
// Forward: for each stage: allgather the unit's shards -> full params, run, free. The next
// stage's allgather is issued before this stage runs (prefetch), so it travels during compute.
// Backward, stage by stage in reverse: re-gather, run the stage's backward, reduce-scatter the
// unit's full gradient into the shard, free. The reduce-scatter is asynchronous: it travels while
// the earlier stages run their backward (as DDP overlaps its buckets), and is waited for before
// forward_backward returns. A unit serving several stages is reduced once, after its last
// backward (autograd has summed its gradients by then).
// With recompute (activation checkpointing) the forward keeps only each stage's input and the
// backward re-runs the stage with grad; without it the forward keeps the stage's autograd graph
// and with it the unit's full parameters until that stage's backward (memory: all units' full
// params plus all activations during a step, like DDP).
//
// Mixed precision (compute_dtype bf16 or fp16; FSDP MixedPrecision's defaults with fp32
// reduction): the shards, the optimizer state and the gradient reduction stay fp32 (master
// weights); each rank casts its shard to compute_dtype BEFORE the allgather (half the bytes of
// gathering fp32 and casting after), so parameters and activations are in that dtype, and each
// gradient is converted back to fp32 before it is reduced into the shard. With
// set_reduce_dtype(bf16) (FSDP's reduce_dtype=bf16) each gradient is converted to bf16 instead
// and reduced with Comm::reduce_scatter_add_bf16_async (half the reduce-scatter bytes); the sum
// is still added into the fp32 shard. Bytes per step: docs/fabtrain.md "Precision".
//
// Where the shards live: by default the host vectors of FlatShard (param, grad) ARE the shards and
// the host optimizer loops update them in place (CPU training). With a tensor device (GPU
// training, or `--step-impl tensor` on CPU, which runs the same code for tests) each shard is an
// fp32 tensor on that device, gathered and reduced there, and stepped by the tensor optimizers
// (optim/tensor_*.h); the host vectors are then the checkpoint mirror, written by
// sync_params_to_host() and read by sync_params_from_host().
//
// Gradients are SUMMED over ranks: the loss stage must return sum(token losses) / (tokens of the
// whole global batch), so the summed gradient equals the 1-process gradient of the global mean.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "trainer/distributed/comm.h"
#include "trainer/parallel/activation_offload.h"
#include "trainer/parallel/flat_shard.h"

namespace fabkit::trainer {

struct UnitParams {
  std::string unit;
  std::vector<std::pair<std::string, at::Tensor>> params;  // leaf tensors of the model
};

// What one collective of the model moved: its name, the dtype on the wire and the bytes of the
// whole buffer (allgather: the gathered unit, world x slice; reduce-scatter: the full gradient).
struct CollectiveRecord {
  std::string op;  // "allgather", "reduce-scatter"
  at::ScalarType dtype = at::kFloat;
  int64_t bytes = 0;
};

struct Stage {
  std::string name;
  size_t unit = 0;
  // Input: the previous stage's output (undefined for the first stage). The last stage returns
  // the scalar loss.
  std::function<at::Tensor(const at::Tensor& input)> forward;
};

class ShardedModel {
 public:
  // Takes the full parameters (equal on all ranks after a broadcast from rank 0), keeps this
  // rank's slice and frees the rest.
  // tensor_device: keep the shards as tensors on this device (see above); nullopt = host vectors.
  ShardedModel(Comm& comm, std::vector<UnitParams> units, std::vector<Stage> stages, bool recompute,
               at::ScalarType compute_dtype = at::kFloat, std::optional<at::Device> tensor_device = std::nullopt);

  // One micro-batch: forward and backward through every stage; grads are added to the shards.
  // Returns the last stage's value (this rank's part of the loss) as a detached double scalar on
  // device(): it is never read back here, so a step queues its work without waiting for the GPU
  // (the loop reads the loss on log steps only). loss_scale multiplies the gradient the backward
  // starts from (fp16 loss scaling); the shards then hold scaled gradients.
  at::Tensor forward_backward(double loss_scale = 1.0);
  // Forward only, without grad (validation).
  double forward_loss();
  // A pipeline stage (parallel/pipeline_runner.h) with several micro-batches in flight.
  // forward_keep runs every stage of this model from `input` (the previous pipeline stage's
  // activation, a leaf that requires grad; undefined on the first pipeline stage) as one autograd
  // graph, and keeps it and the gathered units until the backward_kept of the same micro-batch
  // (units are gathered once for all micro-batches in flight). backward_kept starts from `output`
  // with `grad_output` (undefined: output is the loss, started from loss_scale), adds the
  // gradients to the shards (reduced over this model's comm: the stage's replicas) and releases
  // what the forward kept. No recompute here: the caller refuses --recompute with a pipeline.
  //
  // Chunks (interleaved pipeline schedules: a rank runs several non-adjacent runs of layers): after
  // set_chunks, `chunk` selects the run of stages these calls go through; without it there is one
  // chunk, every stage.
  at::Tensor forward_keep(const at::Tensor& input, int chunk = 0);
  // Forward only, without grad, from `input` (undefined on the first pipeline stage): a pipeline
  // stage's part of validation. Units are gathered and released stage by stage.
  at::Tensor forward_only(const at::Tensor& input, int chunk = 0);
  void backward_kept(const at::Tensor& output, const at::Tensor& grad_output, double loss_scale,
                     int chunk = 0);
  // A split backward (zero-bubble schedules, weight_grad_store.h): backward_input runs autograd
  // from `output` (the caller has a WeightGradStore active, so the GEMMs leave their weight
  // gradients in it) and keeps the units gathered; after the caller has flushed that store (the W
  // pass), finish_backward reduces the chunk's gradients and releases what the forward kept.
  // backward_kept is backward_input + finish_backward without a store.
  void backward_input(const at::Tensor& output, const at::Tensor& grad_output, double loss_scale);
  void finish_backward(int chunk = 0);
  // The first stage of each chunk, ascending from 0 (size = chunks); checked against the stages.
  void set_chunks(std::vector<size_t> first_stages);
  int chunks() const { return static_cast<int>(chunk_first_.size()); }
  // Starts gathering the first stage's unit for the next forward, so it travels while the caller
  // finishes the step (logging, the next batch). Call after the optimizer step, on every rank.
  void prefetch_first_stage();

  // The shards with every gradient settled (a unit whose zeroing was deferred, see zero_grad, is
  // zeroed now). The non-const access may write the gradients: it forgets their squared norms.
  std::vector<FlatShard>& shards() {
    settle_grads(/*may_write=*/true);
    return shards_;
  }
  const std::vector<FlatShard>& shards() const {
    settle_grads(/*may_write=*/false);
    return shards_;
  }
  // The shards as fp32 tensors [shard_numel] on device(): in tensor mode the shards themselves
  // (stable for the model's life: the tensor optimizers keep them); in host mode fresh views of the
  // host vectors, valid until a vector is replaced (a resume).
  at::Tensor param_tensor(size_t unit) const;
  at::Tensor grad_tensor(size_t unit) const;
  std::vector<at::Tensor> param_tensors() const;
  std::vector<at::Tensor> grad_tensors() const;
  bool tensor_shards() const { return tensor_device_.has_value(); }
  at::Device device() const { return tensor_device_.value_or(at::Device(at::kCPU)); }
  // Tensor mode: shards' params -> FlatShard::param (before a checkpoint or export), and back
  // (after a resume wrote the host vectors). No-ops in host mode, where they are one memory.
  void sync_params_to_host();
  void sync_params_from_host();
  // Host shards of a world of one defer the zeroing to their unit's first gradient, which then
  // overwrites the shard (every access to the gradients zeroes a unit that got none).
  void zero_grad();
  // Host shards of a world of one: the sum of the squares of this rank's gradient shards, as the
  // step's reductions wrote them (taken in the same pass); nullopt when some unit's gradient was
  // not written that way or may have changed since (any non-const access to the shards or their
  // tensors), so the caller computes it from the shards.
  std::optional<double> local_grad_sq_norm() const;
  // params + grads this rank holds (wherever they live; optimizer state is the optimizer's).
  int64_t state_bytes() const;

  // --fused-step: each unit's reduced gradient goes to `apply(unit, grad)` as soon as it is
  // complete, during the backward (grad: shard_numel floats on device(), valid for the call), and
  // no gradient shard is kept: their memory is freed here. A unit without any gradient gets zeros,
  // as the shard's zeroed gradient would. zero_grad and the grad tensors are unused afterwards.
  using UnitStep = std::function<void(size_t unit, const float* grad)>;
  void enable_fused_step(UnitStep apply);
  // --offload-activations (with recompute): each stage's input, the only activation kept between
  // forward and backward, waits in host memory (pinned on CUDA) and comes back to the device one
  // stage ahead of its recompute; on a GPU both copies run on a side stream (activation_offload.h).
  void enable_activation_offload();
  bool offload_on_side_stream() const { return offloader_ && offloader_->on_side_stream(); }
  // --reduce-dtype: the dtype gradients travel in to be reduced, fp32 (the default) or bf16.
  // Any compute dtype may pair with either (fp32 compute with a bf16 reduction halves the
  // reduce-scatter bytes as in FSDP); set before the first forward_backward. A world of one
  // reduces nothing and adds each gradient to its shard unrounded.
  void set_reduce_dtype(at::ScalarType dtype);
  at::ScalarType reduce_dtype() const { return reduce_dtype_; }
  // Called with every allgather and reduce-scatter the model issues (tests, byte accounting).
  void set_collective_observer(std::function<void(const CollectiveRecord&)> observer) {
    observer_ = std::move(observer);
  }
  // The unit's full, unpadded parameter vector (a collective: every rank must call it).
  std::vector<float> gather_full(size_t unit);
  int64_t unsharded_param_numel() const;

 private:
  void gather(size_t unit);
  void start_allgather(size_t unit);
  void prefetch(size_t unit);  // start_allgather unless the unit is live or already on its way
  void release(size_t unit);
  void reduce_grads(size_t unit);
  void store_host_grads(size_t unit);
  // Zeroes every unit still waiting for its zeroing; may_write: the caller gets writable
  // gradients, so the squared norms taken by store_host_grads are forgotten too.
  void settle_grads(bool may_write) const;
  void wait_reductions(size_t keep_in_flight);

  Comm& comm_;
  std::vector<UnitParams> units_;
  std::vector<Stage> stages_;
  bool recompute_;
  at::ScalarType compute_dtype_;
  at::ScalarType reduce_dtype_ = at::kFloat;
  std::optional<at::Device> tensor_device_;
  std::vector<FlatShard> shards_;
  std::vector<at::Tensor> param_t_, grad_t_;  // tensor mode only: per unit, fp32 [shard_numel]
  std::vector<int> gathered_;        // reference count per unit
  // Host mode, per unit: the gradient shard awaits its zeroing (its first reduction overwrites it);
  // and the squared norm of the gradient shard as its last reduction wrote it. Mutable: the const
  // accessors settle the gradients before anyone reads them (and grad_tensor, const but handing
  // out writable tensors, forgets the norms).
  mutable std::vector<bool> grad_stale_;
  mutable std::vector<std::optional<double>> grad_sq_;
  std::vector<at::Tensor> full_;     // the gathered flat buffer while gathered (or prefetching)
  std::vector<CommRequestPtr> prefetch_;  // per unit: an allgather in flight into full_
  std::vector<size_t> first_stage_;  // per unit: its first stage (= its last in backward)
  std::vector<size_t> chunk_first_{0};                     // the first stage of each chunk
  std::pair<size_t, size_t> chunk_range(int chunk) const;  // [first, end) stages of a chunk
  // Per unit while its allgather is in flight: the compute-dtype send buffer (kept alive until the
  // wait) and the fp32 words each rank sends.
  struct Gathering {
    at::Tensor send;
    int64_t words = 0;
  };
  std::vector<Gathering> gathering_;
  std::function<void(const CollectiveRecord&)> observer_;
  void record(const CollectiveRecord& r) const;
  void apply_fused(size_t unit, const at::Tensor& grad);

  UnitStep fused_step_;
  std::unique_ptr<ActivationOffloader> offloader_;
  struct Reduction {
    CommRequestPtr request;
    at::Tensor full_grad;            // the send buffer, alive until the request completes
    size_t unit = 0;
    at::Tensor fused_grad;           // --fused-step: the unit's reduced gradient, stepped on completion
  };
  std::deque<Reduction> reductions_;
};

}  // namespace fabkit::trainer
