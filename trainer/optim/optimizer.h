// Optimizers over flat parameter shards (parallel/flat_shard.h). They know nothing of ranks:
// each sees only its slice. Adafactor's factored statistics span whole rows and columns of the
// original parameter, which sharding splits, so it takes a "sum across shards" callback.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trainer/parallel/flat_shard.h"

namespace fabkit::trainer {

// One piece of optimizer state for one unit, for checkpoints.
struct NamedArray {
  std::string name;            // "exp_avg", "exp_avg_sq", "row", "col", "v"
  std::vector<float> values;
};

class ShardOptimizer {
 public:
  virtual ~ShardOptimizer() = default;
  virtual std::string name() const = 0;
  // One update of every shard's param from its grad, at learning rate lr.
  virtual void step(std::vector<FlatShard>& shards, double lr) = 0;
  // The same with every gradient multiplied by grad_scale first (gradient clipping): optimizers
  // that read each gradient once fold the product into that read instead of a pass of its own
  // over the gradients (the result is the same to the bit: each gradient is rounded to fp32
  // after the product either way).
  virtual void step_scaled(std::vector<FlatShard>& shards, double lr, float grad_scale);
  // The same update one unit at a time, with the unit's gradient given (`--fused-step`: each unit
  // is stepped in the backward as soon as its gradient is reduced, and no gradient shard is kept).
  // Call begin_step() once per optimizer step, then step_unit for every unit in the same order on
  // every rank (Adafactor's statistics are summed across shards inside). grad: shard_numel floats
  // where the optimizer's parameters live (host for the loops, the device for tensor optimizers).
  void begin_step() { ++steps_; }
  virtual void step_unit(std::vector<FlatShard>& shards, size_t unit, const float* grad, double lr) = 0;
  virtual int64_t state_bytes() const = 0;
  virtual std::vector<NamedArray> state(size_t unit) const = 0;
  // Throws UsageError naming the array when sizes do not match this layout.
  virtual void load_state(size_t unit, const std::vector<NamedArray>& arrays) = 0;
  // Resharding a checkpoint written by another world size: this rank's state arrays for `shard`
  // (its slice of the unit under the new world size), from every old rank's state arrays of the
  // same unit, in old rank order. The result goes to load_state.
  virtual std::vector<NamedArray> reshard_state(const FlatShard& shard,
                                                const std::vector<std::vector<NamedArray>>& old_ranks) const = 0;
  int64_t steps() const { return steps_; }
  void set_steps(int64_t s) { steps_ = s; }

 protected:
  int64_t steps_ = 0;
};

// The array called `name` of every old rank, in rank order (UsageError naming it when missing).
std::vector<const std::vector<float>*> arrays_named(const std::vector<std::vector<NamedArray>>& old_ranks,
                                                    const std::string& name);

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

// Same update as torch.optim.AdamW: decoupled decay p *= 1 - lr*wd, bias-corrected moments,
// p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps).
std::unique_ptr<ShardOptimizer> make_adamw(const std::vector<FlatShard>& shards, const AdamWOptions& o);
// AdamW's checkpoint arrays "exp_avg" and "exp_avg_sq" (per element, like the parameters) for
// `shard`, from the old ranks' arrays; shared with the tensor AdamW (tensor_optimizers.h).
std::vector<NamedArray> adamw_reshard_state(const FlatShard& shard, const std::vector<std::vector<NamedArray>>& old_ranks);

struct AdafactorOptions {
  double eps1 = 1e-30;        // added to g^2 (HF's eps[0])
  double clip_threshold = 1.0;  // update RMS clip d
  double decay_rate = -0.8;   // beta2_t = 1 - t^decay_rate
  double weight_decay = 0.0;
};

// sum_across_shards(data, n): element-wise sum of the n floats over every rank holding a shard of
// the same units (an allreduce); the identity for one process.
using ShardSum = std::function<void(float* data, size_t count)>;

// Adafactor (Shazeer & Stern 2018, HF's defaults with relative_step=False, scale_parameter=False,
// warmup_init=False, beta1=None): factored second moment for >= 2-D params, full for 1-D.
std::unique_ptr<ShardOptimizer> make_adafactor(const std::vector<FlatShard>& shards,
                                               const AdafactorOptions& o, ShardSum sum_across_shards);

// Global-norm clipping over all shards of all ranks. Returns the norm before clipping; scales the
// grads by max_norm / (norm + 1e-6) when norm > max_norm (torch.nn.utils.clip_grad_norm_).
// max_norm <= 0: no clipping, norm still returned.
double clip_grad_norm(std::vector<FlatShard>& shards, double max_norm,
                      const std::function<void(double*, size_t)>& sum_across_shards);

}  // namespace fabkit::trainer
