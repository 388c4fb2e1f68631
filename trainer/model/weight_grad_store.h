// The weight-gradient half of a split backward, for zero-bubble pipeline schedules (ZB-H1,
// pipeline_schedule.h): the backward's B pass computes only the input gradient of each GEMM (what
// the previous pipeline stage is waiting for) and leaves each weight gradient, dW = dyᵀ·x, as work
// in a WeightGradStore; the W pass runs it later, in what would otherwise be the pipeline's
// bubble. Only the GEMMs' weights are deferred (they are ~all of a layer's weight-gradient FLOPs);
// the RMSNorm and embedding gradients are computed in B, as the zero-bubble paper's implementation
// does.
//
// Why this and not autograd: LibTorch can compute the input gradient alone
// (torch::autograd::grad(output, input)), but a later pass for the weights would run the whole
// activation-gradient chain again (about the B pass twice over). Splitting at the GEMMs, as
// Megatron's and the paper's WeightGradStore do, keeps B + W equal to one backward.
#pragma once

#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>

namespace fabkit::trainer {

class WeightGradStore {
 public:
  // The weight gradients of one GEMM backward: the weights (leaves, or views/concatenations of
  // leaves with their autograd graph) and, computed when asked, their gradients in that order.
  struct Work {
    std::vector<at::Tensor> weights;
    std::function<std::vector<at::Tensor>()> gradients;
  };

  // The store the running backward defers into (null: weight gradients are computed at once).
  // One per process at a time: the pipeline runner's. Read on autograd's worker threads too (a
  // GPU backward runs there), hence a process-wide pointer rather than a thread-local.
  static WeightGradStore* active();

  // While alive, `store` receives the weight gradients of every GEMM backward that runs.
  class Scope {
   public:
    explicit Scope(WeightGradStore& store);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    WeightGradStore* previous_;
  };

  void defer(Work work);
  // The W pass: every deferred gradient computed and sent into its weights in one autograd call
  // (a leaf accumulates it into .grad, as the whole backward would have; a concatenation passes
  // it on to its parts). Leaves the store empty.
  void flush();
  bool empty() const { return work_.empty(); }
  size_t size() const { return work_.size(); }

 private:
  std::vector<Work> work_;
};

// Whether the model builds its GEMMs from deferrable_linear (set by the pipeline engine for a
// split-backward schedule before the first forward; off by default, where the GEMMs are ATen's own
// linear and nothing changes).
void set_split_weight_grads(bool on);
bool split_weight_grads();

// y = x·wᵀ with a backward that defers dW into the active store (deferred only when a store is
// active; otherwise both gradients at once). x [..., in], w [out, in].
at::Tensor deferrable_linear(const at::Tensor& x, const at::Tensor& w);
// ATen's linear, or deferrable_linear when split_weight_grads() is on.
at::Tensor model_linear(const at::Tensor& x, const at::Tensor& w);

}  // namespace fabkit::trainer
