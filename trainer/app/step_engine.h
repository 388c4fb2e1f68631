// The seam between fabtrain's one training loop (train_loop.h) and a parallelism. The loop owns
// everything a step has in common whatever the parallelism: epochs and the data position, loss
// scaling, clipping and the optimizer step, logging, evaluation, save/resume and control. An
// engine owns what differs: how the micro-batches of one step run forward and backward (and
// validation), where its checkpoints live, and the figures only it knows.
//
// Two engines: sharded data parallel (sharded_engine.h: every rank holds a slice of every unit)
// and pipeline stages (pipeline_engine.h: stage-major ranks, each stage sharded over its
// replicas). Both hold their units in a ShardedModel and step them with a ShardOptimizer, so the
// gradient checks, the clip and the step are written once here.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "trainer/app/device_setup.h"
#include "trainer/app/nccl_transport.h"
#include "trainer/app/train_options.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/data/batch.h"
#include "trainer/data/dataset.h"
#include "trainer/distributed/comm.h"
#include "trainer/distributed/launch_env.h"
#include "trainer/model/pretrained.h"
#include "trainer/optim/optimizer.h"
#include "trainer/parallel/llama_plan.h"
#include "trainer/parallel/sharded_model.h"

namespace fabkit::trainer {

class TrainLog;

// What train_command.cc has set up before the engine exists.
struct EngineInputs {
  const LaunchEnv& launch;
  const CommOptions& comm_options;  // the world's, for a pipeline's stage communicators
  Comm& world;
  TrainDevice device;
  bool tensor_step = false;
  LoadedModel loaded;
  NcclLogPlan nccl_log;
  std::optional<std::string> required_transport;
};

// finish_step's sums over the world, on the model's device.
struct StepSums {
  at::Tensor figures;  // double [2]: the world's loss, the gradient norm
  at::Tensor extra;    // double [extra.size()]: the sums of finish_step's `extra` values
  // Waits (host, with the collective deadline: a missing rank is named) until the sums have
  // landed; then read_landed() copies them out without waiting for later device work.
  CommRequestPtr landed;
};

// The values of a StepSums tensor whose `landed` was waited for, on the host. On a GPU the copy
// runs on a side stream: the current stream already holds the next step's work, which it must not
// wait for. On the CPU a plain read.
std::vector<double> read_landed(const at::Tensor& t);

class StepEngine {
 public:
  virtual ~StepEngine() = default;

  // The data layout: ranks with the same replica index read the same micro-batches (a pipeline's
  // stages); replica r of replicas() reads slice r of the sampler's order (sampler.h).
  int replica() const { return replica_; }
  int replicas() const { return replicas_; }
  int64_t micro_batches_per_step() const { return micro_batches_; }
  Comm& world() { return world_; }
  ShardedModel& model() { return *model_; }
  ShardOptimizer& optimizer() { return *opt_; }
  const TrainDevice& device() const { return device_; }
  // params + grads + optimizer state this rank holds.
  int64_t state_bytes() const { return model_->state_bytes() + opt_->state_bytes(); }
  // "2 ranks x micro-batch 1 x grad-accum 4": the batch of one step, for the too-few-data error.
  virtual std::string step_batch_text(int64_t micro_batch_size) const = 0;

  // The step, in the loop's order: begin_step, forward_backward, (fp16) the finite check and
  // unscale, finish_step, end_step.
  virtual void begin_step(double /*lr*/) {}
  // zero_grad, then every micro-batch forward and backward; the gradients end in the shards.
  // Returns this rank's share of the summed loss as a double scalar on the model's device, not
  // read back (the loop sums it over the world in finish_step's one collective).
  virtual at::Tensor forward_backward(const std::vector<Batch>& micro, double loss_normalizer,
                                      double loss_scale) = 0;
  // --fused-step: the step is already applied; this rank's squared gradient norm (device scalar).
  virtual std::optional<at::Tensor> fused_grad_sq() { return std::nullopt; }
  virtual void end_step() {}
  // Returns once the work this rank queued on its device (every stream) has run: the ends of the
  // loop's timed interval (train_loop.cc). A virtual, so a test's engine can stand for a device
  // whose work finishes after the host returns.
  virtual void wait_for_device() { synchronize_device(device_); }
  // Mean validation loss over the whole validation set (a collective on the world).
  virtual double validation_loss(const std::vector<Example>& valid, const TrainOptions& o) = 0;
  // Figures only this engine knows, added to the metrics of a log step. A collective: every rank
  // calls it at the same (log) step, and only then.
  virtual void add_log_metrics(Json& /*m*/, double /*step_ms*/) {}
  // Text for TensorBoard's text dashboard at the start of the run (the pipeline's schedule);
  // empty: none.
  virtual std::string run_summary_text() const { return {}; }

  // Checkpoints: the newest complete one (nullopt: none), and a new one of `req.state`.
  virtual std::optional<TrainState> resume(const std::string& output_dir,
                                           std::vector<std::string>* warnings) = 0;
  // Returns what the log line names after "checkpoint ".
  virtual std::string save(SaveRequest req, std::vector<std::string>* warnings) = 0;

  // Shared by both engines (step_engine.cc). fp16: whether every rank's gradients are finite (a
  // collective on the world, read on the host: fp16 decides on the host whether to step, as
  // torch's unfused GradScaler does: the one host read of an fp16 step); the unscale.
  bool grads_finite_everywhere();
  void unscale_grads(double scale);
  // The rest of the step, with ONE collective on the world: this rank's loss share, squared
  // gradient norm and `extra` host values (the control votes) summed over ranks together, then
  // (when apply and not fused) the clip and the optimizer step. Nothing is read back: with tensor
  // shards nothing here waits for the GPU; the loop reads the sums on log steps, the votes one
  // step later (train_loop.cc). The norm is NaN when the step was skipped (fp16 overflow).
  StepSums finish_step(const at::Tensor& loss, bool apply, double max_grad_norm, double lr,
                       const std::vector<double>& extra = {});

 protected:
  StepEngine(Comm& world, const TrainDevice& device, bool tensor_step, int replica, int replicas,
             int64_t micro_batches)
      : world_(world),
        device_(device),
        tensor_step_(tensor_step),
        replica_(replica),
        replicas_(replicas),
        micro_batches_(micro_batches) {}
  // The optimizer over the model's shards; Adafactor's row/column sums cross `unit_comm`, the
  // ranks that shard one unit (the world, or a stage's replicas).
  void make_optimizer(const TrainOptions& o, Comm& unit_comm, TrainLog& log);
  // The micro-batch's tensors on the model's device (a no-op on CPU).
  void load(const Batch& b, double loss_normalizer);

  Comm& world_;
  TrainDevice device_;
  bool tensor_step_;
  int replica_, replicas_;
  int64_t micro_batches_;
  std::shared_ptr<MicroBatch> mb_ = std::make_shared<MicroBatch>();
  std::unique_ptr<ShardedModel> model_;
  std::unique_ptr<ShardOptimizer> opt_;
};

// Target tokens the causal loss counts: labels[:, 1:] != -100 (the logits at t predict t+1).
int64_t target_tokens(const at::Tensor& labels);
// Real (unpadded) tokens: the sum of a host batch's attention mask.
int64_t mask_tokens(const at::Tensor& attention_mask);

}  // namespace fabkit::trainer
