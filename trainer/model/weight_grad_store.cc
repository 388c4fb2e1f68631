#include "trainer/model/weight_grad_store.h"

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <atomic>

#include "common/errors.h"

namespace fabkit::trainer {
namespace {

std::atomic<WeightGradStore*> g_active{nullptr};
std::atomic<bool> g_split{false};

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class DeferrableLinear : public torch::autograd::Function<DeferrableLinear> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w) {
    ctx->save_for_backward({x, w});
    return at::linear(x, w);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& w = saved[1];
    const at::Tensor dy = grads[0].reshape({-1, w.size(0)});
    at::Tensor dx, dw;
    if (ctx->needs_input_grad(0)) dx = at::mm(dy, w).view(x.sizes());
    if (ctx->needs_input_grad(1)) {
      const at::Tensor x2 = x.reshape({-1, w.size(1)});
      if (WeightGradStore* store = WeightGradStore::active()) {
        store->defer({{w}, [dy, x2]() -> std::vector<at::Tensor> { return {at::mm(dy.t(), x2)}; }});
      } else {
        dw = at::mm(dy.t(), x2);
      }
    }
    return {dx, dw};
  }
};

}  // namespace

WeightGradStore* WeightGradStore::active() { return g_active.load(); }

WeightGradStore::Scope::Scope(WeightGradStore& store) : previous_(g_active.exchange(&store)) {}
WeightGradStore::Scope::~Scope() { g_active.store(previous_); }

void WeightGradStore::defer(Work work) { work_.push_back(std::move(work)); }

void WeightGradStore::flush() {
  std::vector<at::Tensor> roots, grads;
  for (Work& w : work_) {
    std::vector<at::Tensor> g = w.gradients();
    FABKIT_ENFORCE(g.size() == w.weights.size(), "a deferred weight gradient lost its weight");
    for (size_t i = 0; i < g.size(); ++i) {
      if (!g[i].defined() || !w.weights[i].requires_grad()) continue;
      roots.push_back(w.weights[i]);
      grads.push_back(std::move(g[i]));
    }
  }
  work_.clear();
  if (!roots.empty()) torch::autograd::backward(roots, grads);
}

void set_split_weight_grads(bool on) { g_split.store(on); }
bool split_weight_grads() { return g_split.load(); }

at::Tensor deferrable_linear(const at::Tensor& x, const at::Tensor& w) {
  return DeferrableLinear::apply(x, w);
}

at::Tensor model_linear(const at::Tensor& x, const at::Tensor& w) {
  return split_weight_grads() ? deferrable_linear(x, w) : at::linear(x, w);
}

}  // namespace fabkit::trainer
