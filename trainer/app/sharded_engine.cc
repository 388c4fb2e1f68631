#include "trainer/app/sharded_engine.h"

#include <torch/torch.h>

#include <cmath>

#include "common/errors.h"
#include "trainer/data/sampler.h"
#include "trainer/optim/optimizer.h"

namespace fabkit::trainer {
namespace {

class ShardedEngine : public StepEngine {
 public:
  ShardedEngine(const TrainOptions& o, EngineInputs& in, TrainLog& log)
      : StepEngine(in.world, in.device, in.tensor_step, in.world.rank(), in.world.world_size(),
                   o.grad_accum),
        fused_(o.fused_step) {
    // Precision: the model's weights stay fp32 (the shards are the master copy); a gathered unit
    // is handed to its stage in the compute dtype.
    const torch::ScalarType compute_dtype = parse_dtype_name(o.torch_dtype);
    in.loaded.model->set_compute_dtype(compute_dtype);
    in.loaded.model->set_device(device_.device());
    LlamaPlan plan = plan_llama(in.loaded.model, mb_);
    model_ = std::make_unique<ShardedModel>(
        world_, std::move(plan.units), std::move(plan.stages), o.recompute, compute_dtype,
        tensor_step_ ? std::optional<at::Device>(device_.device()) : std::nullopt);
    model_->set_reduce_dtype(parse_dtype_name(o.reduce_dtype));
    if (o.offload_activations) {
      model_->enable_activation_offload();
      if (device_.cuda) {
        log.info("activation offload: each layer's checkpointed input waits in pinned host memory");
      } else {
        log.warn(
            "--offload-activations on CPU copies the checkpoints within host memory: it saves "
            "nothing here "
            "(it is for GPU runs)");
      }
    }
    // --fused-step: the optimizer runs inside the backward, unit by unit (the lr and the squared
    // gradient norm of the step are set and read around forward_backward).
    if (fused_) {
      model_->enable_fused_step([this](size_t u, const float* g) {
        const int64_t n = model_->shards()[u].shard_numel;
        at::Tensor t =
            torch::from_blob(const_cast<float*>(g), {n},
                             torch::TensorOptions(torch::kFloat32).device(model_->device()));
        // The norm in fp32 (ATen accumulates it in a wider type), squared in double: a dtype=double
        // norm would first copy the whole unit to double, twice the gradient's memory.
        fused_sq_.add_(at::linalg_vector_norm(t, 2).to(torch::kDouble).square());
        opt_->step_unit(model_->shards(), u, g, fused_lr_);
      });
      log.info(
          "fused step: each unit is updated in the backward as its gradient arrives; no gradient "
          "shards kept");
    }
    // The shards' broadcast was NCCL's first collective: its log now names the network.
    if (device_.cuda) check_nccl_transport(in.nccl_log, in.required_transport, world_, log);
    make_optimizer(o, world_, log);
    log.info("sharded " + std::to_string(model_->shards().size()) + " units over " +
             std::to_string(world_.world_size()) + " ranks: params+grads+" + opt_->name() +
             " state " + std::to_string(state_bytes()) + " bytes per rank (" +
             std::to_string(model_->unsharded_param_numel()) + " parameters)" +
             (o.recompute ? ", recompute on" : "") + "; " +
             reduce_dtype_text(o.reduce_dtype, world_.world_size()));
  }

  std::string step_batch_text(int64_t micro_batch_size) const override {
    return std::to_string(replicas_) + " ranks x micro-batch " + std::to_string(micro_batch_size) +
           " x grad-accum " + std::to_string(micro_batches_);
  }

  void begin_step(double lr) override {
    if (!fused_) return;
    fused_lr_ = lr;
    fused_sq_ = torch::zeros({}, torch::TensorOptions(torch::kDouble).device(model_->device()));
    opt_->begin_step();
  }
  at::Tensor forward_backward(const std::vector<Batch>& micro, double loss_normalizer,
                              double loss_scale) override {
    at::Tensor loss;
    model_->zero_grad();
    for (const Batch& b : micro) {
      load(b, loss_normalizer);
      at::Tensor l = model_->forward_backward(loss_scale);
      loss = loss.defined() ? loss + l : l;
    }
    return loss;
  }
  std::optional<at::Tensor> fused_grad_sq() override {
    if (!fused_) return std::nullopt;
    return fused_sq_;
  }
  void end_step() override { model_->prefetch_first_stage(); }

  // Every rank runs its slice of the validation set; the sums cross ranks once.
  double validation_loss(const std::vector<Example>& valid, const TrainOptions& o) override {
    double acc[2] = {0.0, 0.0};  // loss sum, tokens
    for (const auto& idx : epoch_batches(valid.size(), o.seed, 0, replica_, replicas_,
                                         static_cast<size_t>(o.micro_batch_size))) {
      Batch b = make_batch(valid, idx);
      load(b, 1.0);
      acc[0] += model_->forward_loss();  // validation reads each batch's loss: not a step
      acc[1] += static_cast<double>(target_tokens(b.labels));
    }
    world_.allreduce_sum(acc, 2);
    return acc[1] > 0 ? acc[0] / acc[1] : 0.0;
  }

  std::optional<TrainState> resume(const std::string& output_dir,
                                   std::vector<std::string>* warnings) override {
    return resume_latest(world_, output_dir, model_->shards(), *opt_, warnings);
  }
  std::string save(SaveRequest req, std::vector<std::string>* warnings) override {
    return save_checkpoint(world_, req, model_->shards(), *opt_, warnings).string();
  }

 private:
  bool fused_;
  double fused_lr_ = 0.0;
  at::Tensor fused_sq_;
};

}  // namespace

// --fused-step steps each unit before the step's global facts exist; --offload-activations moves
// recompute's checkpoints. Refused combinations name the flag that fixes them.
void check_memory_options(const TrainOptions& o) {
  if (o.offload_activations && !o.recompute) {
    throw UsageError(
        "--offload-activations moves the per-layer checkpoints of --recompute to host memory: add "
        "--recompute");
  }
  if (!o.fused_step) return;
  if (o.max_grad_norm > 0) {
    throw UsageError(
        "--fused-step updates each unit during the backward, before the global gradient norm "
        "exists: "
        "clipping at --max-grad-norm " +
        std::to_string(o.max_grad_norm) + " is impossible; pass --max-grad-norm 0");
  }
  if (o.grad_accum != 1) {
    throw UsageError("--fused-step applies each micro-batch's gradient at once: --grad-accum " +
                     std::to_string(o.grad_accum) +
                     " needs kept gradient shards; use --grad-accum 1");
  }
  if (o.torch_dtype == "float16") {
    throw UsageError(
        "--fused-step cannot skip a step whose float16 gradients overflowed (the check needs every "
        "unit's gradient first): use --torch-dtype bfloat16 or drop --fused-step");
  }
}

std::unique_ptr<StepEngine> make_sharded_engine(const TrainOptions& o, EngineInputs& in,
                                                TrainLog& log) {
  return std::make_unique<ShardedEngine>(o, in, log);
}

}  // namespace fabkit::trainer
