#include "trainer/model/swiglu_mlp.h"

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <vector>

#include "common/errors.h"
#include "trainer/model/swiglu_cpu.h"
#include "trainer/model/weight_grad_store.h"

namespace fabkit::trainer {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// gate and up as one [2I, H] operand: the flat buffer itself when they are adjacent, else a copy.
at::Tensor gate_up_weight(const at::Tensor& gate_w, const at::Tensor& up_w) {
  at::Tensor view = adjacent_rows_view(gate_w, up_w);
  return view.defined() ? view : at::cat({gate_w, up_w}, 0);
}

// fp32 on the CPU: the fused passes (swiglu_cpu.h). Elsewhere (a GPU, bf16) ATen's ops.
bool fused_on_cpu(const at::Tensor& gate_up) {
  return gate_up.device().is_cpu() && gate_up.scalar_type() == at::kFloat &&
         gate_up.is_contiguous();
}

// silu(g) ⊙ u. Off the fused path with the op-by-op formula's ops (silu, then the product), so
// bf16 rounds as HF's `act_fn(gate_proj(x)) * up_proj(x)` does.
at::Tensor swiglu(const at::Tensor& gate_up, int64_t inter) {
  if (fused_on_cpu(gate_up)) {
    std::vector<int64_t> sizes = gate_up.sizes().vec();
    sizes.back() = inter;
    at::Tensor h = at::empty(sizes, gate_up.options());
    swiglu_forward_fp32(gate_up.data_ptr<float>(), h.data_ptr<float>(),
                        gate_up.numel() / (2 * inter), inter);
    return h;
  }
  return at::silu(gate_up.narrow(-1, 0, inter)).mul_(gate_up.narrow(-1, inter, inter));
}

// From dy [N, H]: [dg | du] into one [N, 2I] buffer (the GEMMs after it read it whole, where the
// op-by-op backward concatenates the two halves first), and down_proj's gradient dyᵀ·h when
// `d_down` is not null, h = silu(g) ⊙ u held only for that GEMM.
at::Tensor swiglu_backward(const at::Tensor& gu, const at::Tensor& dy, const at::Tensor& down_w,
                           int64_t inter, at::Tensor* d_down) {
  if (fused_on_cpu(gu)) {
    const at::Tensor dh = at::mm(dy, down_w);  // [N, I]
    at::Tensor d_gate_up = at::empty_like(gu);
    at::Tensor h = d_down ? at::empty_like(dh) : at::Tensor();
    swiglu_backward_fp32(gu.data_ptr<float>(), dh.data_ptr<float>(), d_gate_up.data_ptr<float>(),
                         d_down ? h.data_ptr<float>() : nullptr, gu.size(0), inter);
    if (d_down) *d_down = at::mm(dy.t(), h);
    return d_gate_up;
  }
  const at::Tensor gate = gu.narrow(1, 0, inter), up = gu.narrow(1, inter, inter);
  // In the order that keeps the fewest [N, I] buffers alive at once (a GPU's peak): the product
  // is freed before dh and the output exist.
  at::Tensor silu_gate = at::silu(gate);
  if (d_down) *d_down = at::mm(dy.t(), silu_gate * up);
  const at::Tensor dh = at::mm(dy, down_w);
  at::Tensor d_gate_up = at::empty_like(gu);
  at::Tensor d_gate = d_gate_up.narrow(1, 0, inter), d_up = d_gate_up.narrow(1, inter, inter);
  at::mul_out(d_up, dh, silu_gate);
  silu_gate = at::Tensor();
  at::silu_backward_out(d_gate, dh * up, gate);
  return d_gate_up;
}

class SwiGluMlp : public torch::autograd::Function<SwiGluMlp> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& gate_w,
                            const at::Tensor& up_w, const at::Tensor& down_w) {
    const int64_t inter = gate_w.size(0);
    at::Tensor gate_up = at::linear(x, gate_up_weight(gate_w, up_w));  // [..., 2I]
    at::Tensor out = at::linear(swiglu(gate_up, inter), down_w);
    // What the backward needs and cannot cheaply recompute: the GEMMs' inputs. The weights are the
    // model's own tensors (no copy); silu(gate) and the product are recomputed.
    ctx->save_for_backward({x, gate_w, up_w, down_w, gate_up});
    return out;
  }

  // y = h·Wdᵀ, h = silu(g) ⊙ u, [g | u] = x·[Wg; Wu]ᵀ:
  //   dWd = dyᵀ·h, dh = dy·Wd, du = dh ⊙ silu(g), dg = silu'(g) · (dh ⊙ u),
  //   d[Wg; Wu] = [dg | du]ᵀ·x, dx = [dg | du]·[Wg; Wu].
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& gate_w = saved[1];
    const at::Tensor& up_w = saved[2];
    const at::Tensor& down_w = saved[3];
    const at::Tensor& gate_up = saved[4];
    const int64_t hidden = x.size(-1), inter = gate_w.size(0);
    const at::Tensor dy = grads[0].reshape({-1, hidden});
    const at::Tensor gu = gate_up.reshape({-1, 2 * inter});

    // A split backward (weight_grad_store.h): the weight GEMMs wait for the W pass, keeping dy,
    // the gate/up product and x (and [dg | du] below) until then.
    WeightGradStore* store = WeightGradStore::active();
    at::Tensor d_down;
    const at::Tensor d_gate_up = swiglu_backward(
        gu, dy, down_w, inter, ctx->needs_input_grad(3) && !store ? &d_down : nullptr);

    at::Tensor dx, d_gate, d_up;
    if (ctx->needs_input_grad(0))
      dx = at::mm(d_gate_up, gate_up_weight(gate_w, up_w)).view(x.sizes());
    if (store) {
      const at::Tensor x2 = x.reshape({-1, hidden});
      store->defer({{gate_w, up_w, down_w}, [dy, gu, d_gate_up, x2, inter]() {
                      const at::Tensor d_w = at::mm(d_gate_up.t(), x2);
                      const at::Tensor h = swiglu(gu, inter);
                      return std::vector<at::Tensor>{
                          d_w.narrow(0, 0, inter), d_w.narrow(0, inter, inter), at::mm(dy.t(), h)};
                    }});
      return {dx, d_gate, d_up, d_down};
    }
    if (ctx->needs_input_grad(1) || ctx->needs_input_grad(2)) {
      // One [2I, H] GEMM; its two row blocks are contiguous, as the parameters are.
      at::Tensor d_w = at::mm(d_gate_up.t(), x.reshape({-1, hidden}));
      if (ctx->needs_input_grad(1)) d_gate = d_w.narrow(0, 0, inter);
      if (ctx->needs_input_grad(2)) d_up = d_w.narrow(0, inter, inter);
    }
    return {dx, d_gate, d_up, d_down};
  }
};

}  // namespace

at::Tensor adjacent_rows_view(const at::Tensor& first, const at::Tensor& second) {
  if (first.dim() != 2 || second.dim() != 2 || first.size(1) != second.size(1) ||
      first.scalar_type() != second.scalar_type() || first.device() != second.device() ||
      !first.is_contiguous() || !second.is_contiguous() || !first.has_storage() ||
      !second.has_storage() || !first.storage().is_alias_of(second.storage()) ||
      second.storage_offset() != first.storage_offset() + first.numel()) {
    return {};
  }
  // Within the shared storage by construction (both tensors are), so as_strided cannot reach
  // outside it.
  return first.detach().as_strided({first.size(0) + second.size(0), first.size(1)},
                                   {first.size(1), 1}, first.storage_offset());
}

at::Tensor swiglu_mlp(const at::Tensor& x, const at::Tensor& gate_w, const at::Tensor& up_w,
                      const at::Tensor& down_w) {
  FABKIT_ENFORCE(gate_w.dim() == 2 && up_w.sizes() == gate_w.sizes() && down_w.dim() == 2 &&
                     down_w.size(0) == gate_w.size(1) && down_w.size(1) == gate_w.size(0) &&
                     x.size(-1) == gate_w.size(1),
                 "swiglu_mlp: gate/up [I,H], down [H,I] and x [...,H] disagree");
  return SwiGluMlp::apply(x, gate_w, up_w, down_w);
}

}  // namespace fabkit::trainer
