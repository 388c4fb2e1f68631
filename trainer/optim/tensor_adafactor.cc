// Adafactor on the shards' tensors: adafactor.cc's algorithm (read its header for the sharded
// statistics) as ATen ops, so it runs where the shards live (the GPU) without a host round trip.
//
// A shard cuts a factored (R x C, row-major) parameter at arbitrary offsets, so this rank's slice
// of it is: the tail of one row, some whole rows, the head of one row. for_each_piece walks those
// (at most three) pieces; whole rows are one [rows, C] view, so the row and column sums and the
// update are a handful of kernels per parameter instead of per-element index arithmetic.
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "common/errors.h"
#include "trainer/optim/adafactor_layout.h"
#include "trainer/optim/tensor_optimizers.h"

namespace fabkit::trainer {
namespace {

// fn(pos, row, col, whole_rows, count): elements [pos, pos + count) of the slice start at (row,
// col) of the parameter; whole_rows > 0 means they are that many complete rows (col == 0).
template <typename F>
void for_each_piece(const AdafactorFactor& f, int64_t len, F&& fn) {
  int64_t pos = 0;
  while (pos < len) {
    const int64_t k = f.first + pos, r = k / f.cols, c = k % f.cols;
    if (c == 0 && len - pos >= f.cols) {
      const int64_t rows = (len - pos) / f.cols;
      fn(pos, r, c, rows, rows * f.cols);
      pos += rows * f.cols;
    } else {
      const int64_t m = std::min(f.cols - c, len - pos);
      fn(pos, r, c, int64_t{0}, m);
      pos += m;
    }
  }
}

std::vector<float> to_host_vector(const at::Tensor& t) {
  at::Tensor c = t.detach().to(at::kCPU).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

class TensorAdafactor : public ShardOptimizer {
 public:
  TensorAdafactor(const std::vector<FlatShard>& shards, std::vector<at::Tensor> params,
                  std::vector<at::Tensor> grads, const AdafactorOptions& o, ShardSum sum)
      : o_(o), sum_(std::move(sum)), params_(std::move(params)), grads_(std::move(grads)) {
    FABKIT_ENFORCE(params_.size() == shards.size() && grads_.size() == shards.size(),
                   "tensor Adafactor: one param and grad tensor per shard");
    for (size_t u = 0; u < shards.size(); ++u) {
      AdafactorUnitLayout l = adafactor_layout(shards[u]);
      factors_.push_back(std::move(l.factors));
      stats_.push_back(at::zeros({l.stats}, params_[u].options()));
      v_.push_back(at::zeros({l.v}, params_[u].options()));
    }
  }
  std::string name() const override { return "adafactor"; }

  void step(std::vector<FlatShard>& shards, double lr) override {
    FABKIT_ENFORCE(shards.size() == factors_.size(), "tensor Adafactor: shard count changed");
    begin_step();
    for (size_t u = 0; u < factors_.size(); ++u) apply(u, grads_[u], lr);
  }
  void step_unit(std::vector<FlatShard>& shards, size_t unit, const float* grad, double lr) override {
    FABKIT_ENFORCE(unit < factors_.size() && shards.size() == factors_.size(), "tensor Adafactor: unit out of range");
    apply(unit, at::from_blob(const_cast<float*>(grad), {params_[unit].numel()}, params_[unit].options()), lr);
  }

  int64_t state_bytes() const override {
    int64_t b = 0;
    for (size_t u = 0; u < stats_.size(); ++u)
      b += (stats_[u].numel() + v_[u].numel()) * static_cast<int64_t>(sizeof(float));
    return b;
  }
  std::vector<NamedArray> state(size_t unit) const override {
    return {{"factored_row_col", to_host_vector(stats_.at(unit))},
            {"v", to_host_vector(v_.at(unit))}};
  }
  std::vector<NamedArray> reshard_state(
      const FlatShard& shard,
      const std::vector<std::vector<NamedArray>>& old_ranks) const override {
    return adafactor_reshard_state(shard, old_ranks);
  }
  void load_state(size_t unit, const std::vector<NamedArray>& arrays) override {
    for (const auto& a : arrays) {
      at::Tensor* dst = a.name == "factored_row_col" ? &stats_.at(unit)
                        : a.name == "v"              ? &v_.at(unit)
                                                     : nullptr;
      if (!dst)
        throw UsageError("Adafactor state: unknown array '" + a.name + "' for unit " +
                         std::to_string(unit));
      if (static_cast<int64_t>(a.values.size()) != dst->numel()) {
        throw UsageError("Adafactor state '" + a.name + "' of unit " + std::to_string(unit) +
                         " has " + std::to_string(a.values.size()) + " values, expected " +
                         std::to_string(dst->numel()));
      }
      dst->copy_(at::from_blob(const_cast<float*>(a.values.data()), {dst->numel()}, at::kFloat));
    }
  }

 private:
  void apply(size_t u, const at::Tensor& g, double lr) {
    // As the host loop: the float values of the schedule's scalars.
    const double beta2t = static_cast<float>(1.0 - std::pow(static_cast<double>(steps_), o_.decay_rate));
    const double eps1 = static_cast<float>(o_.eps1);
    at::Tensor& p = params_[u];
    at::Tensor& st = stats_[u];
    at::Tensor& v = v_[u];
    const auto& fs = factors_[u];

    // 1. Row/column sums of g^2 + eps1 over this slice, completed across shards; the unfactored
    //    parameters' full second moment.
    at::Tensor partial = at::zeros_like(st);
    for (const auto& f : fs) {
      const int64_t len = f.hi - f.lo;
      if (len == 0) continue;
      at::Tensor g2 = g.narrow(0, f.lo, len).square().add_(eps1);
      if (f.cols == 0) {
        v.narrow(0, f.v_at, len).mul_(beta2t).add_(g2, 1.0 - beta2t);
        continue;
      }
      for_each_piece(f, len, [&](int64_t pos, int64_t r, int64_t c, int64_t rows, int64_t n) {
        if (rows > 0) {
          at::Tensor block = g2.narrow(0, pos, n).view({rows, f.cols});
          partial.narrow(0, f.row_at + r, rows).add_(block.sum(1));
          partial.narrow(0, f.col_at, f.cols).add_(block.sum(0));
        } else {
          at::Tensor seg = g2.narrow(0, pos, n);
          partial.narrow(0, f.row_at + r, 1).add_(seg.sum());
          partial.narrow(0, f.col_at + c, n).add_(seg);
        }
      });
    }
    if (partial.numel() > 0) sum_(partial.data_ptr<float>(), static_cast<size_t>(partial.numel()));
    std::vector<at::Tensor> row_factor(fs.size()), col_factor(fs.size());
    for (size_t j = 0; j < fs.size(); ++j) {
      const auto& f = fs[j];
      if (f.cols == 0) continue;
      at::Tensor rows = st.narrow(0, f.row_at, f.rows), cols = st.narrow(0, f.col_at, f.cols);
      rows.mul_(beta2t).add_(partial.narrow(0, f.row_at, f.rows),
                             (1.0 - beta2t) / static_cast<double>(f.cols));
      cols.mul_(beta2t).add_(partial.narrow(0, f.col_at, f.cols),
                             (1.0 - beta2t) / static_cast<double>(f.rows));
      row_factor[j] = (rows / rows.mean()).rsqrt();
      col_factor[j] = cols.rsqrt();
    }

    // 2. The unclipped update x = g / sqrt(v_hat), and its sum of squares per parameter across
    //    shards (the RMS clip is over the whole parameter).
    at::Tensor update = at::empty_like(g);
    std::vector<at::Tensor> squares;
    for (size_t j = 0; j < fs.size(); ++j) {
      const auto& f = fs[j];
      const int64_t len = f.hi - f.lo;
      if (len == 0) {
        squares.push_back(at::zeros({}, g.options()));
        continue;
      }
      at::Tensor gs = g.narrow(0, f.lo, len), out = update.narrow(0, f.lo, len);
      if (f.cols == 0) {
        at::div_out(out, gs, v.narrow(0, f.v_at, len).sqrt());
      } else {
        for_each_piece(f, len, [&](int64_t pos, int64_t r, int64_t c, int64_t rows, int64_t n) {
          if (rows > 0) {
            out.narrow(0, pos, n)
                .view({rows, f.cols})
                .copy_(gs.narrow(0, pos, n).view({rows, f.cols}) *
                       row_factor[j].narrow(0, r, rows).unsqueeze(1) * col_factor[j].unsqueeze(0));
          } else {
            out.narrow(0, pos, n).copy_(gs.narrow(0, pos, n) * row_factor[j].narrow(0, r, 1) *
                                        col_factor[j].narrow(0, c, n));
          }
        });
      }
      squares.push_back(out.square().sum());
    }
    at::Tensor sq = squares.empty() ? at::zeros({0}, g.options()) : at::stack(squares);
    if (sq.numel() > 0) sum_(sq.data_ptr<float>(), static_cast<size_t>(sq.numel()));

    // 3. Clip by RMS / d, decay, apply. The scale stays a device scalar: no host round trip.
    const double decay = o_.weight_decay * lr;
    for (size_t j = 0; j < fs.size(); ++j) {
      const auto& f = fs[j];
      const int64_t len = f.hi - f.lo;
      if (len == 0) continue;
      at::Tensor rms = (sq[j] / static_cast<double>(f.numel)).sqrt();
      at::Tensor scale = lr / (rms / o_.clip_threshold).clamp_min(1.0);
      at::Tensor ps = p.narrow(0, f.lo, len);
      if (decay != 0.0) ps.add_(ps, -decay);
      ps.sub_(update.narrow(0, f.lo, len) * scale);
    }
  }

  AdafactorOptions o_;
  ShardSum sum_;
  std::vector<at::Tensor> params_, grads_;
  std::vector<std::vector<AdafactorFactor>> factors_;
  std::vector<at::Tensor> stats_;  // per unit: [row stats, col stats] per factored param
  std::vector<at::Tensor> v_;      // per unit: unfactored second moments in this slice
};

}  // namespace

std::unique_ptr<ShardOptimizer> make_tensor_adafactor(const std::vector<FlatShard>& shards,
                                                      std::vector<at::Tensor> params,
                                                      std::vector<at::Tensor> grads,
                                                      const AdafactorOptions& o,
                                                      ShardSum sum_across_shards) {
  return std::make_unique<TensorAdafactor>(shards, std::move(params), std::move(grads), o,
                                           std::move(sum_across_shards));
}

}  // namespace fabkit::trainer
