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
#include <map>
#include <utility>

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
    std::vector<size_t> all(factors_.size());
    for (size_t u = 0; u < all.size(); ++u) all[u] = u;
    apply(all, grads_, lr);
  }
  void step_unit(std::vector<FlatShard>& shards, size_t unit, const float* grad, double lr) override {
    FABKIT_ENFORCE(unit < factors_.size() && shards.size() == factors_.size(), "tensor Adafactor: unit out of range");
    apply(
        {unit},
        {at::from_blob(const_cast<float*>(grad), {params_[unit].numel()}, params_[unit].options())},
        lr);
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
  // One step of the units `us` (every unit, or one with --fused-step) with gradients gs[i] for
  // us[i]. The element-wise work runs as at::_foreach_* ops over all their parameters at once (a
  // handful of launches per step, as torch.optim.Adafactor(foreach=True)); what stays per
  // parameter is what foreach cannot express: the row/column reductions and the row-by-column
  // factor products (broadcasts), plus the per-parameter clip scale. Both collectives (the
  // row/column sums, the squared update norms) cross the shards once for all units.
  void apply(const std::vector<size_t>& us, const std::vector<at::Tensor>& gs, double lr) {
    // As the host loop: the float values of the schedule's scalars.
    const double beta2t = static_cast<float>(1.0 - std::pow(static_cast<double>(steps_), o_.decay_rate));
    const double eps1 = static_cast<float>(o_.eps1);
    const at::TensorOptions opt = params_[us.front()].options();

    // 1. g^2 + eps1, then the row/column sums of it over this slice into `partial` (all units'
    //    statistics back to back), the unfactored parameters' second moment in place.
    std::vector<at::Tensor> g2 = at::_foreach_mul(gs, gs);
    at::_foreach_add_(g2, eps1);
    int64_t stats_total = 0;
    for (size_t u : us) stats_total += stats_[u].numel();
    at::Tensor partial = at::zeros({stats_total}, opt);
    std::vector<at::Tensor> v_seg, g2_unf, g_unf, p_unf;
    // Column sums by the piece's place in its parameter's walk (0, 1, 2): each foreach adds into
    // distinct parameters' columns, in the same order per element as one parameter's walk.
    std::vector<at::Tensor> col_dst[3], col_src[3];
    std::vector<Factored> fact;  // the factored parameters of this call, in order
    // Every parameter of the call, also those outside this rank's slice: the collectives have
    // the same length on every rank.
    std::vector<double> numel;
    std::vector<int64_t> unf_index;
    int64_t at_stats = 0;
    for (size_t i = 0; i < us.size(); ++i) {
      const size_t u = us[i];
      at::Tensor part = partial.narrow(0, at_stats, stats_[u].numel());
      at_stats += stats_[u].numel();
      for (const auto& f : factors_[u]) {
        const int64_t len = f.hi - f.lo;
        const auto index = static_cast<int64_t>(numel.size());
        numel.push_back(static_cast<double>(f.numel));
        if (len == 0) continue;
        if (f.cols == 0) {
          unf_index.push_back(index);
          v_seg.push_back(v_[u].narrow(0, f.v_at, len));
          g2_unf.push_back(g2[i].narrow(0, f.lo, len));
          g_unf.push_back(gs[i].narrow(0, f.lo, len));
          p_unf.push_back(params_[u].narrow(0, f.lo, len));
          continue;
        }
        Factored x{u, i, index, &f, part, {}};
        int k = 0;
        for_each_piece(f, len, [&](int64_t pos, int64_t r, int64_t c, int64_t rows, int64_t n) {
          x.pieces.push_back({f.lo + pos, r, c, rows, n});
          at::Tensor sq = g2[i].narrow(0, f.lo + pos, n);
          if (rows > 0) {
            at::Tensor block = sq.view({rows, f.cols});
            // Rows are not shared between pieces and start at 0: writing the sum is adding it.
            at::Tensor row_sums = part.narrow(0, f.row_at + r, rows);
            at::sum_out(row_sums, block, at::IntArrayRef{1});
            col_src[k].push_back(block.sum(0));
            col_dst[k].push_back(part.narrow(0, f.col_at, f.cols));
          } else {
            at::Tensor row_sum = part.narrow(0, f.row_at + r, 1);
            at::sum_out(row_sum, sq, at::IntArrayRef{0}, /*keepdim=*/true);
            col_src[k].push_back(sq);
            col_dst[k].push_back(part.narrow(0, f.col_at + c, n));
          }
          ++k;
        });
        fact.push_back(std::move(x));
      }
    }
    for (int k = 0; k < 3; ++k) {
      if (!col_dst[k].empty()) at::_foreach_add_(col_dst[k], col_src[k]);
    }
    if (!v_seg.empty()) {
      at::_foreach_mul_(v_seg, beta2t);
      at::_foreach_add_(v_seg, g2_unf, 1.0 - beta2t);
    }
    if (partial.numel() > 0) sum_(partial.data_ptr<float>(), static_cast<size_t>(partial.numel()));

    // 2. The running row/column statistics and the factors rsqrt(row / mean(row)), rsqrt(col).
    //    Every factored parameter's statistics move, also those of parameters outside this
    //    rank's slice: every rank holds (and checkpoints) the same statistics.
    std::vector<at::Tensor> stats_rc;
    // add_ with alpha (1 - beta2t) / cols (rows) per parameter: one foreach per distinct alpha
    // (a transformer has few distinct widths).
    std::map<double, std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>>> by_alpha;
    int64_t unit_at = 0;
    for (size_t u : us) {
      at::Tensor part = partial.narrow(0, unit_at, stats_[u].numel());
      unit_at += stats_[u].numel();
      for (const auto& f : factors_[u]) {
        if (f.cols == 0) continue;
        at::Tensor rows = stats_[u].narrow(0, f.row_at, f.rows),
                   cols = stats_[u].narrow(0, f.col_at, f.cols);
        stats_rc.push_back(rows);
        stats_rc.push_back(cols);
        auto& ra = by_alpha[(1.0 - beta2t) / static_cast<double>(f.cols)];
        ra.first.push_back(rows);
        ra.second.push_back(part.narrow(0, f.row_at, f.rows));
        auto& ca = by_alpha[(1.0 - beta2t) / static_cast<double>(f.rows)];
        ca.first.push_back(cols);
        ca.second.push_back(part.narrow(0, f.col_at, f.cols));
      }
    }
    if (!stats_rc.empty()) {
      at::_foreach_mul_(stats_rc, beta2t);
      for (auto& [alpha, lists] : by_alpha) at::_foreach_add_(lists.first, lists.second, alpha);
    }
    // The factors of the parameters this slice updates.
    std::vector<at::Tensor> row_factor, col_stats, col_factor;
    for (const auto& x : fact) {
      const auto& f = *x.f;
      at::Tensor rows = stats_[x.unit].narrow(0, f.row_at, f.rows);
      row_factor.push_back(rows / rows.mean());
      col_stats.push_back(stats_[x.unit].narrow(0, f.col_at, f.cols));
    }
    if (!fact.empty()) {
      at::_foreach_rsqrt_(row_factor);
      col_factor = at::_foreach_rsqrt(col_stats);
    }

    // 3. The unclipped update x = g / sqrt(v_hat) per piece: g times the piece's outer product of
    //    the factors (factored), g / sqrt(v) (unfactored).
    std::vector<at::Tensor> g_pieces, factor_pieces, p_pieces;
    std::vector<int64_t> owner;  // piece -> parameter index in this call
    for (size_t j = 0; j < fact.size(); ++j) {
      const auto& x = fact[j];
      for (const auto& pc : x.pieces) {
        at::Tensor g = gs[x.grad].narrow(0, pc.pos, pc.n),
                   p = params_[x.unit].narrow(0, pc.pos, pc.n);
        if (pc.rows > 0) {
          g_pieces.push_back(g.view({pc.rows, x.f->cols}));
          p_pieces.push_back(p.view({pc.rows, x.f->cols}));
          factor_pieces.push_back(row_factor[j].narrow(0, pc.r, pc.rows).unsqueeze(1) *
                                  col_factor[j].unsqueeze(0));
        } else {
          g_pieces.push_back(g);
          p_pieces.push_back(p);
          factor_pieces.push_back(row_factor[j].narrow(0, pc.r, 1) *
                                  col_factor[j].narrow(0, pc.c, pc.n));
        }
        owner.push_back(x.index);
      }
    }
    std::vector<at::Tensor> update =
        g_pieces.empty() ? std::vector<at::Tensor>{} : at::_foreach_mul(g_pieces, factor_pieces);
    if (!v_seg.empty()) {
      std::vector<at::Tensor> unf = at::_foreach_div(g_unf, at::_foreach_sqrt(v_seg));
      for (size_t k = 0; k < unf.size(); ++k) {
        update.push_back(unf[k]);
        p_pieces.push_back(p_unf[k]);
        owner.push_back(unf_index[k]);
      }
    }

    // 4. Each parameter's squared update norm across shards (the RMS clip is over the whole
    //    parameter), the clip scale lr / max(1, RMS / d), decay, apply. Every rank joins the
    //    collective, also one whose slice holds no element of these units.
    const auto n_params = static_cast<int64_t>(numel.size());
    at::Tensor sq = at::zeros({n_params}, opt);
    if (!update.empty()) {
      std::vector<at::Tensor> norms = at::_foreach_norm(update, 2);
      sq.index_add_(0, index_tensor(owner, opt.device()), at::stack(norms).square());
    }
    if (n_params > 0) sum_(sq.data_ptr<float>(), static_cast<size_t>(n_params));
    if (update.empty()) return;
    at::Tensor rms = (sq / host_vector_on(numel, opt)).sqrt();
    at::Tensor scale = lr / (rms / o_.clip_threshold).clamp_min(1.0);
    const double decay = o_.weight_decay * lr;
    if (decay != 0.0) at::_foreach_add_(p_pieces, p_pieces, -decay);
    for (size_t k = 0; k < update.size(); ++k) update[k].mul_(scale[owner[k]]);
    at::_foreach_sub_(p_pieces, update);
  }

  // One factored parameter of an apply() call: where it lives, its slice's pieces, and its unit's
  // part of the call's row/column sums.
  struct Piece {
    int64_t pos, r, c, rows, n;  // shard-local start; (row, col) there; whole rows; elements
  };
  struct Factored {
    size_t unit, grad;  // unit index; index into the call's gradients
    int64_t index;      // the parameter's index among all of the call's
    const AdafactorFactor* f;
    at::Tensor partial;
    std::vector<Piece> pieces;
  };

  // Small index/value vectors the step needs on the device, made once per distinct content (a
  // host-to-device copy each step would wait for the GPU's queue).
  at::Tensor index_tensor(const std::vector<int64_t>& v, at::Device d) {
    auto it = index_cache_.find(v);
    if (it != index_cache_.end()) return it->second;
    at::Tensor t = at::tensor(v, at::kLong).to(d);
    index_cache_.emplace(v, t);
    return t;
  }
  at::Tensor host_vector_on(const std::vector<double>& v, const at::TensorOptions& opt) {
    auto it = value_cache_.find(v);
    if (it != value_cache_.end()) return it->second;
    at::Tensor t = at::tensor(v, at::kDouble).to(opt);
    value_cache_.emplace(v, t);
    return t;
  }
  std::map<std::vector<int64_t>, at::Tensor> index_cache_;
  std::map<std::vector<double>, at::Tensor> value_cache_;

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
