// Adafactor on flat shards.
//
// The factored second moment of a parameter of shape (R, C) keeps a row statistic r[R] and a
// column statistic c[C]. Flat sharding cuts a parameter at arbitrary element offsets, so one
// rank sees part of some rows and part of some columns. Choice: every rank keeps the FULL r and
// c of every factored parameter of its units (R + C floats, replicated — tiny next to R*C), adds
// up its partial row/column sums of g^2, and one sum across shards per unit completes them; all
// ranks then apply the same deterministic update to r and c. The alternative (shard along whole
// rows) would need a second layout only for Adafactor. The update's RMS clip needs the RMS over
// the whole parameter: a second, small sum across shards. 1-D parameters (norms) keep a full
// second moment v for their elements in this shard. Parameters with more than 2 dims factor
// as (prod(shape[:-1]), shape[-1]).
#include <algorithm>
#include <cmath>

#include "common/errors.h"
#include "trainer/optim/adafactor_layout.h"

namespace fabkit::trainer {
namespace {

using Factor = AdafactorFactor;

class Adafactor : public ShardOptimizer {
 public:
  Adafactor(const std::vector<FlatShard>& shards, const AdafactorOptions& o, ShardSum sum)
      : o_(o), sum_(std::move(sum)) {
    for (const auto& s : shards) {
      AdafactorUnitLayout l = adafactor_layout(s);
      factors_.push_back(std::move(l.factors));
      stats_.emplace_back(l.stats, 0.0f);
      v_.emplace_back(l.v, 0.0f);
    }
  }
  std::string name() const override { return "adafactor"; }

  void step(std::vector<FlatShard>& shards, double lr) override {
    FABKIT_ENFORCE(shards.size() == factors_.size(), "Adafactor: shard count changed");
    begin_step();
    for (size_t u = 0; u < shards.size(); ++u) apply(shards[u], u, shards[u].grad.data(), lr);
  }
  void step_unit(std::vector<FlatShard>& shards, size_t unit, const float* grad, double lr) override {
    FABKIT_ENFORCE(unit < factors_.size() && shards.size() == factors_.size(), "Adafactor: unit out of range");
    apply(shards[unit], unit, grad, lr);
  }

 private:
  void apply(FlatShard& shard, size_t u, const float* g, double lr) {
    const float beta2t = static_cast<float>(1.0 - std::pow(static_cast<double>(steps_), o_.decay_rate));
    const float eps1 = static_cast<float>(o_.eps1);
    {
      float* p = shard.param.data();
      auto& fs = factors_[u];
      // 1. Partial row/column sums of g^2 + eps1 for this slice; complete them across shards.
      std::vector<float> partial(stats_[u].size(), 0.0f);
      for (const auto& f : fs) {
        for (int64_t i = f.lo; i < f.hi; ++i) {
          const float g2 = g[i] * g[i] + eps1;
          if (f.cols == 0) {
            float& v = v_[u][f.v_at + i - f.lo];
            v = beta2t * v + (1.0f - beta2t) * g2;
          } else {
            const int64_t k = f.first + (i - f.lo);
            partial[f.row_at + k / f.cols] += g2;
            partial[f.col_at + k % f.cols] += g2;
          }
        }
      }
      if (!partial.empty()) sum_(partial.data(), partial.size());
      std::vector<float> row_mean_of(fs.size(), 0.0f);
      for (size_t j = 0; j < fs.size(); ++j) {
        const auto& f = fs[j];
        if (f.cols == 0) continue;
        float* st = stats_[u].data();
        double acc = 0.0;
        for (int64_t r = 0; r < f.rows; ++r) {  // row stat = mean over the columns of the row
          st[f.row_at + r] = beta2t * st[f.row_at + r] + (1.0f - beta2t) * partial[f.row_at + r] / f.cols;
          acc += st[f.row_at + r];
        }
        for (int64_t c = 0; c < f.cols; ++c) {
          st[f.col_at + c] = beta2t * st[f.col_at + c] + (1.0f - beta2t) * partial[f.col_at + c] / f.rows;
        }
        row_mean_of[j] = static_cast<float>(acc / f.rows);
      }
      // 2. The unclipped update u = g / sqrt(v_hat); its RMS per parameter, across shards.
      auto update = [&](const Factor& f, size_t j, int64_t i) {
        if (f.cols == 0) return g[i] / std::sqrt(v_[u][f.v_at + i - f.lo]);
        const int64_t k = f.first + (i - f.lo);
        const float* st = stats_[u].data();
        const float r_factor = 1.0f / std::sqrt(st[f.row_at + k / f.cols] / row_mean_of[j]);
        const float c_factor = 1.0f / std::sqrt(st[f.col_at + k % f.cols]);
        return g[i] * r_factor * c_factor;
      };
      std::vector<float> sq(fs.size(), 0.0f);
      for (size_t j = 0; j < fs.size(); ++j) {
        double acc = 0.0;
        for (int64_t i = fs[j].lo; i < fs[j].hi; ++i) {
          const float x = update(fs[j], j, i);
          acc += static_cast<double>(x) * x;
        }
        sq[j] = static_cast<float>(acc);
      }
      sum_(sq.data(), sq.size());
      // 3. Clip by RMS / d, decay, apply.
      for (size_t j = 0; j < fs.size(); ++j) {
        const float rms = std::sqrt(sq[j] / static_cast<float>(fs[j].numel));
        const float scale = static_cast<float>(lr) / std::max(1.0f, rms / static_cast<float>(o_.clip_threshold));
        const float decay = static_cast<float>(o_.weight_decay * lr);
        for (int64_t i = fs[j].lo; i < fs[j].hi; ++i) {
          const float x = update(fs[j], j, i);
          p[i] -= decay * p[i];
          p[i] -= scale * x;
        }
      }
    }
  }

 public:
  int64_t state_bytes() const override {
    int64_t b = 0;
    for (size_t u = 0; u < stats_.size(); ++u) b += static_cast<int64_t>((stats_[u].size() + v_[u].size()) * sizeof(float));
    return b;
  }
  std::vector<NamedArray> state(size_t unit) const override {
    return {{"factored_row_col", stats_.at(unit)}, {"v", v_.at(unit)}};
  }
  std::vector<NamedArray> reshard_state(const FlatShard& shard,
                                        const std::vector<std::vector<NamedArray>>& old_ranks) const override {
    return adafactor_reshard_state(shard, old_ranks);
  }
  void load_state(size_t unit, const std::vector<NamedArray>& arrays) override {
    for (const auto& a : arrays) {
      std::vector<float>* dst = a.name == "factored_row_col" ? &stats_.at(unit) : a.name == "v" ? &v_.at(unit) : nullptr;
      if (!dst) throw UsageError("Adafactor state: unknown array '" + a.name + "' for unit " + std::to_string(unit));
      if (a.values.size() != dst->size()) {
        throw UsageError("Adafactor state '" + a.name + "' of unit " + std::to_string(unit) + " has " +
                         std::to_string(a.values.size()) + " values, expected " + std::to_string(dst->size()));
      }
      *dst = a.values;
    }
  }

 private:
  AdafactorOptions o_;
  ShardSum sum_;
  std::vector<std::vector<Factor>> factors_;
  std::vector<std::vector<float>> stats_;  // per unit: [row stats, col stats] per factored param
  std::vector<std::vector<float>> v_;      // per unit: unfactored second moments in this slice
};

}  // namespace

AdafactorUnitLayout adafactor_layout(const FlatShard& s) {
  AdafactorUnitLayout l;
  const int64_t b = s.begin(), e = s.begin() + s.valid_numel();
  for (const auto& p : s.params) {
    AdafactorFactor f;
    f.numel = p.numel;
    if (p.shape.size() >= 2) {
      f.cols = p.shape.back();
      f.rows = p.numel / std::max<int64_t>(f.cols, 1);
      f.row_at = l.stats;
      f.col_at = l.stats + f.rows;
      l.stats += f.rows + f.cols;
    } else {
      f.cols = 0;
    }
    // Every rank lists every parameter (the stats sum needs the same layout everywhere), even
    // when its slice holds none of it.
    f.lo = std::clamp(p.offset, b, e) - b;
    f.hi = std::clamp(p.offset + p.numel, b, e) - b;
    f.first = std::max(p.offset, b) - p.offset;
    if (f.cols == 0) {
      f.v_at = l.v;
      l.v += f.hi - f.lo;
    }
    l.factors.push_back(f);
  }
  return l;
}

std::vector<NamedArray> adafactor_reshard_state(const FlatShard& shard,
                                                const std::vector<std::vector<NamedArray>>& old_ranks) {
  // Row/column statistics are replicated: any old rank's copy is the copy. v holds the
  // elements of the unfactored (1-D) parameters that fall in a rank's slice, in flat order, so
  // the old ranks' v concatenated lists every unfactored element once, in flat order; this
  // rank's part starts after the unfactored elements that precede its slice.
  const auto stats = arrays_named(old_ranks, "factored_row_col");
  std::vector<float> all_v;
  for (const auto* v : arrays_named(old_ranks, "v")) all_v.insert(all_v.end(), v->begin(), v->end());
  const int64_t b = shard.begin(), e = shard.begin() + shard.valid_numel();
  int64_t before = 0, inside = 0;
  for (const auto& p : shard.params) {
    if (p.shape.size() >= 2) continue;
    before += std::clamp<int64_t>(b - p.offset, 0, p.numel);
    inside += std::max<int64_t>(0, std::min(e, p.offset + p.numel) - std::max(b, p.offset));
  }
  if (before + inside > static_cast<int64_t>(all_v.size())) {
    throw UsageError("Adafactor state of unit " + shard.unit + ": the old ranks' v has " + std::to_string(all_v.size()) +
                     " values, the layout needs " + std::to_string(before + inside));
  }
  return {{"factored_row_col", *stats.at(0)},
          {"v", std::vector<float>(all_v.begin() + before, all_v.begin() + before + inside)}};
}

std::unique_ptr<ShardOptimizer> make_adafactor(const std::vector<FlatShard>& shards,
                                               const AdafactorOptions& o, ShardSum sum) {
  return std::make_unique<Adafactor>(shards, o, std::move(sum));
}

}  // namespace fabkit::trainer
