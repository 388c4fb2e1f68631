#include "trainer/app/step_engine.h"

#include <torch/torch.h>

#if FABKIT_TORCH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <cmath>
#include <numeric>

#include "common/errors.h"
#include "trainer/app/batch_copy.h"
#include "trainer/app/train_log.h"
#include "trainer/model/ignore_label.h"
#include "trainer/optim/loss_scale.h"
#include "trainer/optim/tensor_optimizers.h"

namespace fabkit::trainer {

// Counted on the host batch with a plain loop: the batch is host memory, and an ATen reduction
// read back with .item() would look like (and on a device tensor be) a sync in the step.
int64_t target_tokens(const at::Tensor& labels) {
  FABKIT_ENFORCE(labels.device().is_cpu() && labels.dim() == 2 && labels.scalar_type() == at::kLong,
                 "target_tokens counts a host batch's int64 [B,T] labels");
  const at::Tensor l = labels.contiguous();
  const int64_t* p = l.data_ptr<int64_t>();
  const int64_t b = l.size(0), t = l.size(1);
  int64_t n = 0;
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = 1; j < t; ++j) n += p[i * t + j] != kIgnoreLabel;
  }
  return n;
}

int64_t mask_tokens(const at::Tensor& attention_mask) {
  FABKIT_ENFORCE(attention_mask.device().is_cpu() && attention_mask.scalar_type() == at::kLong,
                 "mask_tokens counts a host batch's int64 attention mask");
  const at::Tensor m = attention_mask.contiguous();
  const int64_t* p = m.data_ptr<int64_t>();
  return std::accumulate(p, p + m.numel(), int64_t{0});
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
  // Pinned and queued on a GPU: a pageable copy would wait for every kernel queued so far.
  const BatchCopy how = batch_copy_for(d);
  mb_->input_ids = copy_to_device(b.input_ids, d, how);
  mb_->labels = copy_to_device(b.labels, d, how);
  // A micro-batch without padding reaches the model without a mask, decided here on the host
  // copy: the model then runs plain causal attention (SDPA's is_causal) without reading a device
  // tensor back to find out (a sync per micro-batch on a GPU).
  const bool padded = mask_tokens(b.attention_mask) != b.attention_mask.numel();
  mb_->attention_mask = padded ? copy_to_device(b.attention_mask, d, how) : at::Tensor();
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

std::vector<double> read_landed(const at::Tensor& t) {
  at::Tensor host;
#if FABKIT_TORCH_CUDA
  if (t.is_cuda()) {
    // A pool stream is non-blocking: it does not wait for the current (or the legacy default)
    // stream, and the sums are already in memory (the collective completed).
    const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, t.device().index());
    const c10::cuda::CUDAStreamGuard on_side(side);
    host = t.to(at::kCPU);  // a copy on the side stream, then that stream's sync only
  }
#endif
  if (!host.defined()) {
    FABKIT_ENFORCE(t.device().is_cpu(), "read_landed: a tensor on " + t.device().str());
    host = t;
  }
  host = host.to(at::kDouble).contiguous();
  return {host.data_ptr<double>(), host.data_ptr<double>() + host.numel()};
}

StepSums StepEngine::finish_step(const at::Tensor& loss, bool apply, double max_grad_norm,
                                 double lr, const std::vector<double>& extra) {
  const std::optional<at::Tensor> fused_sq = fused_grad_sq();
  const bool step_here = apply && !fused_sq;
  const at::Device d = model_->device();
  const auto f64 = torch::TensorOptions(torch::kDouble).device(d);
  // Ranks hold disjoint slices (and a pipeline's stages disjoint units): the world's sum of the
  // squared norms is the full model's.
  at::Tensor sq;
  if (fused_sq) {
    sq = fused_sq->to(f64);
  } else if (!apply) {
    sq = torch::full({}, std::nan(""), f64);
  } else if (tensor_step_) {
    sq = tensor_grad_sq_norm(model_->grad_tensors()).to(f64);
  } else {
    // The host loops: the squared norm is a host value already (no device to wait for), taken
    // as the gradients were written when the model could (a world of one).
    std::optional<double> local = model_->local_grad_sq_norm();
    if (!local) clip_grad_norm(model_->shards(), 0.0, [&](double* s, size_t) { local = *s; });
    sq = torch::full({}, *local, f64);
  }
  std::vector<at::Tensor> parts{loss.to(f64).reshape({}), sq};
  // Fills, not a host tensor copied over: a copy from pageable host memory syncs the stream.
  for (const double v : extra) parts.push_back(torch::full({}, v, f64));
  at::Tensor sums = torch::stack(parts).contiguous();
  // A device pointer on a GPU: NCCL sums it in stream order, the host does not wait.
  CommRequestPtr landed = world_.allreduce_sum_landed(sums.data_ptr<double>(), parts.size());
  at::Tensor norm = sums[1].sqrt();
  if (step_here) {
    if (tensor_step_) {
      tensor_clip_by_norm(model_->grad_tensors(), norm, max_grad_norm);
      opt_->step(model_->shards(), lr);
    } else {
      // Host shards: the sums are host memory too. clip_grad_norm's rule, without its second pass:
      // the clipping factor goes into the optimizer's read of each gradient.
      const double world_norm = std::sqrt(sums.data_ptr<double>()[1]);
      const float clip = max_grad_norm > 0 && world_norm > max_grad_norm
                             ? static_cast<float>(max_grad_norm / (world_norm + 1e-6))
                             : 1.0f;
      opt_->step_scaled(model_->shards(), lr, clip);
    }
  }
  return {torch::stack({sums[0], norm}), sums.slice(0, 2), std::move(landed)};
}

}  // namespace fabkit::trainer
