#include "trainer/app/step_engine.h"

#include <torch/torch.h>

#include "trainer/app/train_log.h"
#include "trainer/model/ignore_label.h"
#include "trainer/optim/loss_scale.h"
#include "trainer/optim/tensor_optimizers.h"

namespace fabkit::trainer {

int64_t target_tokens(const at::Tensor& labels) {
  return labels.slice(1, 1).ne(kIgnoreLabel).sum().item<int64_t>();
}

void StepEngine::make_optimizer(const TrainOptions& o, Comm& unit_comm, TrainLog& log) {
  const AdamWOptions adamw_options{o.beta1, o.beta2, o.eps, o.weight_decay};
  AdafactorOptions adafactor_options;
  adafactor_options.weight_decay = o.weight_decay;
  ShardSum sum_across = [&unit_comm](float* d, size_t n) { unit_comm.allreduce_sum(d, n); };
  ShardedModel& m = *model_;
  if (tensor_step_) {
    opt_ = o.optimizer == "adamw"
               ? make_tensor_adamw(m.shards(), m.param_tensors(), m.grad_tensors(), adamw_options)
               : make_tensor_adafactor(m.shards(), m.param_tensors(), m.grad_tensors(),
                                       adafactor_options, sum_across);
  } else {
    opt_ = o.optimizer == "adamw" ? make_adamw(m.shards(), adamw_options)
                                  : make_adafactor(m.shards(), adafactor_options, sum_across);
  }
  log.info("optimizer step: " +
           std::string(tensor_step_ ? "tensor ops on the shards' device" : "host loops") +
           (tensor_step_ && o.optimizer == "adamw" ? " (fused AdamW kernel)" : ""));
}

void StepEngine::load(const Batch& b, double loss_normalizer) {
  const at::Device d = model_->device();
  mb_->input_ids = b.input_ids.to(d);
  mb_->labels = b.labels.to(d);
  mb_->attention_mask = b.attention_mask.to(d);
  mb_->loss_normalizer = loss_normalizer;
}

bool StepEngine::grads_finite_everywhere() {
  const bool finite =
      tensor_step_ ? tensor_grads_finite(model_->grad_tensors()) : grads_finite(model_->shards());
  double bad = finite ? 0.0 : 1.0;
  world_.allreduce_sum(&bad, 1);  // every rank must agree whether the step is applied
  return bad == 0.0;
}

void StepEngine::unscale_grads(double scale) {
  const auto factor = static_cast<float>(1.0 / scale);
  if (tensor_step_) {
    tensor_scale_grads(model_->grad_tensors(), factor);
  } else {
    scale_grads(model_->shards(), factor);
  }
}

double StepEngine::clip_and_step(double max_grad_norm, double lr) {
  // Ranks hold disjoint slices (and a pipeline's stages disjoint units): the world's sum of the
  // squared norms is the full model's.
  auto sum_doubles = [this](double* d, size_t n) { world_.allreduce_sum(d, n); };
  const double norm =
      tensor_step_ ? tensor_clip_grad_norm(model_->grad_tensors(), max_grad_norm, sum_doubles)
                   : clip_grad_norm(model_->shards(), max_grad_norm, sum_doubles);
  opt_->step(model_->shards(), lr);
  return norm;
}

}  // namespace fabkit::trainer
