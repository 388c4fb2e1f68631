#include <ATen/ATen.h>

#include <cmath>

#include "common/errors.h"
#include "trainer/optim/tensor_optimizers.h"

namespace fabkit::trainer {
namespace {

std::vector<float> to_host_vector(const at::Tensor& t) {
  at::Tensor c = t.detach().to(at::kCPU).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

void load_into(at::Tensor& dst, const NamedArray& a, const char* opt, size_t unit) {
  if (static_cast<int64_t>(a.values.size()) != dst.numel()) {
    throw UsageError(std::string(opt) + " state '" + a.name + "' of unit " + std::to_string(unit) +
                     " has " + std::to_string(a.values.size()) + " values, expected " +
                     std::to_string(dst.numel()));
  }
  dst.copy_(at::from_blob(const_cast<float*>(a.values.data()), {dst.numel()}, at::kFloat));
}

class TensorAdamW : public ShardOptimizer {
 public:
  TensorAdamW(const std::vector<FlatShard>& shards, std::vector<at::Tensor> params,
              std::vector<at::Tensor> grads, const AdamWOptions& o)
      : o_(o), params_(std::move(params)), grads_(std::move(grads)) {
    FABKIT_ENFORCE(params_.size() == shards.size() && grads_.size() == shards.size(),
                   "tensor AdamW: one param and grad tensor per shard");
    for (size_t u = 0; u < shards.size(); ++u) {
      FABKIT_ENFORCE(
          params_[u].numel() == shards[u].shard_numel && params_[u].scalar_type() == at::kFloat,
          "tensor AdamW: shard tensors must be fp32 [shard_numel]");
      m_.push_back(at::zeros_like(params_[u]));
      v_.push_back(at::zeros_like(params_[u]));
      // The fused kernel reads the step count from a float tensor on the parameters' device.
      step_t_.push_back(at::zeros({}, params_[u].options()));
    }
  }
  std::string name() const override { return "adamw"; }

  void step(std::vector<FlatShard>& shards, double lr) override {
    FABKIT_ENFORCE(shards.size() == params_.size(), "tensor AdamW: shard count changed");
    begin_step();
    for (auto& s : step_t_) s.fill_(static_cast<double>(steps_));
    // The padding tail stays exactly 0: its gradient is 0, so both moments and the update are 0,
    // and decay multiplies 0.
    at::_fused_adamw_(params_, grads_, m_, v_, /*max_exp_avg_sqs=*/{}, step_t_, lr, o_.beta1,
                      o_.beta2, o_.weight_decay, o_.eps, /*amsgrad=*/false, /*maximize=*/false);
  }

  void step_unit(std::vector<FlatShard>& shards, size_t unit, const float* grad, double lr) override {
    FABKIT_ENFORCE(unit < params_.size() && shards.size() == params_.size(), "tensor AdamW: unit out of range");
    at::Tensor g = at::from_blob(const_cast<float*>(grad), {params_[unit].numel()}, params_[unit].options());
    step_t_[unit].fill_(static_cast<double>(steps_));
    at::_fused_adamw_({params_[unit]}, {g}, {m_[unit]}, {v_[unit]}, /*max_exp_avg_sqs=*/{}, {step_t_[unit]}, lr,
                      o_.beta1, o_.beta2, o_.weight_decay, o_.eps, /*amsgrad=*/false, /*maximize=*/false);
  }

  int64_t state_bytes() const override {
    int64_t b = 0;
    for (size_t u = 0; u < m_.size(); ++u)
      b += (m_[u].numel() + v_[u].numel()) * static_cast<int64_t>(sizeof(float));
    return b;
  }
  std::vector<NamedArray> state(size_t unit) const override {
    return {{"exp_avg", to_host_vector(m_.at(unit))}, {"exp_avg_sq", to_host_vector(v_.at(unit))}};
  }
  std::vector<NamedArray> reshard_state(
      const FlatShard& shard,
      const std::vector<std::vector<NamedArray>>& old_ranks) const override {
    return adamw_reshard_state(shard, old_ranks);
  }
  void load_state(size_t unit, const std::vector<NamedArray>& arrays) override {
    for (const auto& a : arrays) {
      at::Tensor* dst = a.name == "exp_avg"      ? &m_.at(unit)
                        : a.name == "exp_avg_sq" ? &v_.at(unit)
                                                 : nullptr;
      if (!dst)
        throw UsageError("AdamW state: unknown array '" + a.name + "' for unit " +
                         std::to_string(unit));
      load_into(*dst, a, "AdamW", unit);
    }
  }

 private:
  AdamWOptions o_;
  std::vector<at::Tensor> params_, grads_, m_, v_, step_t_;
};

}  // namespace

std::unique_ptr<ShardOptimizer> make_tensor_adamw(const std::vector<FlatShard>& shards,
                                                  std::vector<at::Tensor> params,
                                                  std::vector<at::Tensor> grads,
                                                  const AdamWOptions& o) {
  return std::make_unique<TensorAdamW>(shards, std::move(params), std::move(grads), o);
}

bool tensor_grads_finite(const std::vector<at::Tensor>& grads) {
  if (grads.empty()) return true;
  // One flag on the device and one read at the end: a read per unit would synchronise per unit.
  at::Tensor all = at::ones({}, grads.front().options().dtype(at::kBool));
  for (const auto& g : grads) all.logical_and_(at::isfinite(g).all());
  return all.item<bool>();
}

void tensor_scale_grads(const std::vector<at::Tensor>& grads, float factor) {
  if (!grads.empty()) at::_foreach_mul_(grads, static_cast<double>(factor));
}

at::Tensor tensor_grad_sq_norm(const std::vector<at::Tensor>& grads) {
  // Each shard's norm in fp32 (ATen accumulates reductions in a wider type), the squares summed in
  // double like the host loop. A dtype=double norm would first copy every shard to double.
  if (grads.empty()) return at::zeros({}, at::kDouble);
  std::vector<at::Tensor> norms = at::_foreach_norm(grads, 2);
  return at::stack(norms).to(at::kDouble).square().sum();
}

void tensor_clip_by_norm(const std::vector<at::Tensor>& grads, const at::Tensor& norm,
                         double max_norm) {
  if (grads.empty() || max_norm <= 0) return;
  // Scaling by 1 when the norm is below the limit costs one pass over the grads but no host read
  // to decide whether to scale (torch.nn.utils.clip_grad_norm_ does the same).
  at::Tensor coef = (max_norm / (norm + 1e-6)).clamp_max(1.0).to(at::kFloat);
  at::_foreach_mul_(grads, coef);
}

double tensor_clip_grad_norm(const std::vector<at::Tensor>& grads, double max_norm,
                             const std::function<void(double*, size_t)>& sum_across_shards) {
  double sq = grads.empty() ? 0.0 : tensor_grad_sq_norm(grads).item<double>();
  sum_across_shards(&sq, 1);
  const double norm = std::sqrt(sq);
  if (max_norm > 0 && norm > max_norm)
    tensor_scale_grads(grads, static_cast<float>(max_norm / (norm + 1e-6)));
  return norm;
}

}  // namespace fabkit::trainer
