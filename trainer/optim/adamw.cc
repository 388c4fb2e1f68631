#include <cmath>

#include "common/errors.h"
#include "trainer/optim/optimizer.h"
#include "trainer/parallel/grad_sum.h"

namespace fabkit::trainer {
namespace {

struct AdamWScalars {
  float decay, step_size, sqrt_bc2, b1, b2, eps, grad_scale;
};

// The per-element update, also built for AVX2 (picked at load time by the CPU: the wheel-style
// build targets baseline x86-64, whose SSE halves the width). No FMA in the clone: a fused
// multiply-add would round differently from torch's AdamW, which the parity tests compare to the
// bit; AVX2's sqrt and division round exactly as SSE's.
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target_clones("avx2", "default")))
#endif
void adamw_update(float* __restrict p, float* __restrict m, float* __restrict v,
                  const float* __restrict g, int64_t n, const AdamWScalars s) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i] * s.grad_scale;  // as stored by a separate clipping pass
    p[i] *= s.decay;
    m[i] = s.b1 * m[i] + (1.0f - s.b1) * gi;
    v[i] = s.b2 * v[i] + (1.0f - s.b2) * gi * gi;
    const float denom = std::sqrt(v[i]) / s.sqrt_bc2 + s.eps;
    p[i] -= s.step_size * (m[i] / denom);
  }
}

class AdamW : public ShardOptimizer {
 public:
  AdamW(const std::vector<FlatShard>& shards, const AdamWOptions& o) : o_(o) {
    for (const auto& s : shards) {
      m_.emplace_back(s.shard_numel, 0.0f);
      v_.emplace_back(s.shard_numel, 0.0f);
    }
  }
  std::string name() const override { return "adamw"; }

  void step(std::vector<FlatShard>& shards, double lr) override { step_scaled(shards, lr, 1.0f); }
  void step_scaled(std::vector<FlatShard>& shards, double lr, float grad_scale) override {
    FABKIT_ENFORCE(shards.size() == m_.size(), "AdamW: shard count changed");
    begin_step();
    for (size_t u = 0; u < shards.size(); ++u)
      apply(shards[u], u, shards[u].grad.data(), lr, grad_scale);
  }
  void step_unit(std::vector<FlatShard>& shards, size_t unit, const float* grad, double lr) override {
    FABKIT_ENFORCE(unit < m_.size() && shards.size() == m_.size(), "AdamW: unit out of range");
    apply(shards[unit], unit, grad, lr, 1.0f);
  }

 private:
  void apply(FlatShard& shard, size_t u, const float* g, double lr, float grad_scale) {
    // Scalars in double as torch computes them, applied in fp32 as torch's kernels do.
    const double bc1 = 1.0 - std::pow(o_.beta1, static_cast<double>(steps_));
    const double bc2 = 1.0 - std::pow(o_.beta2, static_cast<double>(steps_));
    const float decay = static_cast<float>(1.0 - lr * o_.weight_decay);
    const float step_size = static_cast<float>(lr / bc1);
    const float sqrt_bc2 = static_cast<float>(std::sqrt(bc2));
    const float b1 = static_cast<float>(o_.beta1), b2 = static_cast<float>(o_.beta2);
    const float eps = static_cast<float>(o_.eps);
    // padding (past valid_numel) stays exactly 0
    adamw_update(shard.param.data(), m_[u].data(), v_[u].data(), g, shard.valid_numel(),
                 {decay, step_size, sqrt_bc2, b1, b2, eps, grad_scale});
  }

 public:
  int64_t state_bytes() const override {
    int64_t b = 0;
    for (size_t u = 0; u < m_.size(); ++u) b += static_cast<int64_t>((m_[u].size() + v_[u].size()) * sizeof(float));
    return b;
  }
  std::vector<NamedArray> state(size_t unit) const override {
    return {{"exp_avg", m_.at(unit)}, {"exp_avg_sq", v_.at(unit)}};
  }
  std::vector<NamedArray> reshard_state(const FlatShard& shard,
                                        const std::vector<std::vector<NamedArray>>& old_ranks) const override {
    return adamw_reshard_state(shard, old_ranks);
  }
  void load_state(size_t unit, const std::vector<NamedArray>& arrays) override {
    for (const auto& a : arrays) {
      std::vector<float>* dst = a.name == "exp_avg" ? &m_.at(unit) : a.name == "exp_avg_sq" ? &v_.at(unit) : nullptr;
      if (!dst) throw UsageError("AdamW state: unknown array '" + a.name + "' for unit " + std::to_string(unit));
      if (a.values.size() != dst->size()) {
        throw UsageError("AdamW state '" + a.name + "' of unit " + std::to_string(unit) + " has " +
                         std::to_string(a.values.size()) + " values, expected " + std::to_string(dst->size()));
      }
      *dst = a.values;
    }
  }

 private:
  AdamWOptions o_;
  std::vector<std::vector<float>> m_, v_;
};

}  // namespace

std::vector<NamedArray> adamw_reshard_state(const FlatShard& shard, const std::vector<std::vector<NamedArray>>& old_ranks) {
  // Both moments are per element, like the parameters.
  return {{"exp_avg", reslice(arrays_named(old_ranks, "exp_avg"), shard)},
          {"exp_avg_sq", reslice(arrays_named(old_ranks, "exp_avg_sq"), shard)}};
}

std::unique_ptr<ShardOptimizer> make_adamw(const std::vector<FlatShard>& shards, const AdamWOptions& o) {
  return std::make_unique<AdamW>(shards, o);
}

double clip_grad_norm(std::vector<FlatShard>& shards, double max_norm,
                      const std::function<void(double*, size_t)>& sum_across_shards) {
  double sq = 0.0;
  for (const auto& s : shards) sq += sum_squares(s.grad.data(), s.valid_numel());
  sum_across_shards(&sq, 1);
  const double norm = std::sqrt(sq);
  if (max_norm > 0 && norm > max_norm) {
    const float scale = static_cast<float>(max_norm / (norm + 1e-6));
    for (auto& s : shards) {
      for (auto& g : s.grad) g *= scale;
    }
  }
  return norm;
}

}  // namespace fabkit::trainer
