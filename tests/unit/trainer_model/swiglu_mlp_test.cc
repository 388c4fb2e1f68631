// The fused SwiGLU MLP (swiglu_mlp.h) against the op-by-op formula HF runs,
// down_proj(silu(gate_proj(x)) * up_proj(x)), forward and all four gradients, with gate and up
// adjacent in one flat buffer (the sharded unit's layout, read through a view) and apart (the
// concatenated copy): fp32 within 1e-6 relative, bf16 within the attention tests' 3e-2.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <torch/torch.h>

#include "trainer/model/llama.h"
#include "trainer/model/swiglu_mlp.h"

namespace fabkit::trainer {
namespace {

// max |a - b| <= rel * max |b| (+ a tiny floor for all-zero references).
void expect_close(const torch::Tensor& a, const torch::Tensor& b, double rel,
                  const std::string& what) {
  ASSERT_TRUE(a.defined()) << what;
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  const auto af = a.to(torch::kFloat64), bf = b.to(torch::kFloat64);
  const double scale = bf.abs().max().item<double>();
  const double diff = (af - bf).abs().max().item<double>();
  EXPECT_LE(diff, rel * scale + 1e-12)
      << what << ": max |diff| " << diff << ", max |ref| " << scale;
}

torch::Tensor reference_mlp(const torch::Tensor& x, const torch::Tensor& gate_w,
                            const torch::Tensor& up_w, const torch::Tensor& down_w) {
  return at::linear(torch::silu(at::linear(x, gate_w)) * at::linear(x, up_w), down_w);
}

struct Weights {
  torch::Tensor flat;  // the buffer gate and up live in when adjacent
  torch::Tensor gate, up, down;
};

// Leaves that require grad. adjacent: gate and up are views of one flat buffer, back to back, set
// into their leaves with set_data as ShardedModel::gather does.
Weights make_weights(int64_t hidden, int64_t inter, torch::ScalarType dtype, bool adjacent) {
  auto init = [&](int64_t rows, int64_t cols) {
    return (torch::randn({rows, cols}) * 0.1).to(dtype);
  };
  Weights w;
  auto g = init(inter, hidden), u = init(inter, hidden);
  w.down = init(hidden, inter).requires_grad_(true);
  if (!adjacent) {
    w.gate = g.requires_grad_(true);
    w.up = u.requires_grad_(true);
    return w;
  }
  // A leading and a trailing parameter around the pair, as q..o_proj and down_proj sit around it.
  w.flat = torch::cat(
      {torch::randn({7}).to(dtype), g.reshape(-1), u.reshape(-1), torch::randn({5}).to(dtype)});
  w.gate = torch::empty({0}, dtype).requires_grad_(true);
  w.up = torch::empty({0}, dtype).requires_grad_(true);
  {
    torch::NoGradGuard no_grad;
    w.gate.set_data(w.flat.narrow(0, 7, inter * hidden).view({inter, hidden}));
    w.up.set_data(w.flat.narrow(0, 7 + inter * hidden, inter * hidden).view({inter, hidden}));
  }
  return w;
}

void check_against_reference(torch::ScalarType dtype, bool adjacent, double rel) {
  torch::manual_seed(5);
  const int64_t b = 3, t = 11, hidden = 32, inter = 88;
  const std::string what = std::string(c10::toString(dtype)) + (adjacent ? " adjacent" : " apart");
  Weights w = make_weights(hidden, inter, dtype, adjacent);
  ASSERT_EQ(adjacent_rows_view(w.gate, w.up).defined(), adjacent) << what;
  auto x = torch::randn({b, t, hidden}).to(dtype).requires_grad_(true);
  auto dy = torch::randn({b, t, hidden}).to(dtype);

  auto want = reference_mlp(x, w.gate, w.up, w.down);
  auto want_grads = torch::autograd::grad({want}, {x, w.gate, w.up, w.down}, {dy});
  auto got = swiglu_mlp(x, w.gate, w.up, w.down);
  auto got_grads = torch::autograd::grad({got}, {x, w.gate, w.up, w.down}, {dy});

  EXPECT_EQ(got.scalar_type(), dtype) << what;
  expect_close(got, want, rel, what + " forward");
  const char* names[] = {"dx", "d gate_proj", "d up_proj", "d down_proj"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(got_grads[i].scalar_type(), dtype) << what << " " << names[i];
    expect_close(got_grads[i], want_grads[i], rel, what + " " + names[i]);
  }
}

TEST(SwiGluMlp, Fp32AdjacentWeightsMatchOpByOp) {
  check_against_reference(torch::kFloat32, true, 1e-6);
}
TEST(SwiGluMlp, Fp32SeparateWeightsMatchOpByOp) {
  check_against_reference(torch::kFloat32, false, 1e-6);
}
TEST(SwiGluMlp, Bf16AdjacentWeightsMatchOpByOp) {
  check_against_reference(torch::kBFloat16, true, 3e-2);
}
TEST(SwiGluMlp, Bf16SeparateWeightsMatchOpByOp) {
  check_against_reference(torch::kBFloat16, false, 3e-2);
}

// The forward rounds as the op-by-op formula does: the same values bit for bit in bf16.
TEST(SwiGluMlp, Bf16ForwardIsTheOpByOpValues) {
  torch::manual_seed(6);
  Weights w = make_weights(32, 88, torch::kBFloat16, true);
  auto x = torch::randn({2, 9, 32}).to(torch::kBFloat16);
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(
      torch::equal(swiglu_mlp(x, w.gate, w.up, w.down), reference_mlp(x, w.gate, w.up, w.down)));
}

// Gradients accumulate into the leaves over two backward passes (micro-batches), and only the
// inputs that need one get one.
TEST(SwiGluMlp, GradientsAccumulateAndFollowRequiresGrad) {
  torch::manual_seed(7);
  Weights w = make_weights(16, 40, torch::kFloat32, true);
  auto x = torch::randn({2, 5, 16});  // no grad: a first layer's input
  swiglu_mlp(x, w.gate, w.up, w.down).sum().backward();
  const auto once = w.up.grad().clone();
  swiglu_mlp(x, w.gate, w.up, w.down).sum().backward();
  expect_close(w.up.grad(), 2 * once, 1e-6, "accumulated d up_proj");
  EXPECT_FALSE(x.grad().defined());

  w.down.requires_grad_(false);
  auto x2 = torch::randn({2, 5, 16}).requires_grad_(true);
  auto grads = torch::autograd::grad({swiglu_mlp(x2, w.gate, w.up, w.down).sum()}, {x2});
  auto want = torch::autograd::grad({reference_mlp(x2, w.gate, w.up, w.down).sum()}, {x2});
  expect_close(grads[0], want[0], 1e-6, "dx with a frozen down_proj");
}

TEST(AdjacentRowsView, AliasesBothOnlyWhenBackToBack) {
  auto flat = torch::arange(40, torch::kFloat32);
  auto a = flat.narrow(0, 4, 12).view({3, 4}), b = flat.narrow(0, 16, 8).view({2, 4});
  auto v = adjacent_rows_view(a, b);
  ASSERT_TRUE(v.defined());
  EXPECT_EQ(v.sizes(), (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(v.data_ptr(), a.data_ptr());  // a view, not a copy
  EXPECT_TRUE(torch::equal(v, torch::cat({a, b}, 0)));

  EXPECT_FALSE(adjacent_rows_view(b, a).defined());                                   // reversed
  EXPECT_FALSE(adjacent_rows_view(a, flat.narrow(0, 20, 8).view({2, 4})).defined());  // a gap
  EXPECT_FALSE(adjacent_rows_view(a, flat.narrow(0, 16, 8).view({4, 2})).defined());  // width
  EXPECT_FALSE(
      adjacent_rows_view(a, torch::arange(16, 24, torch::kFloat32).view({2, 4})).defined());
  auto wide = torch::arange(48, torch::kFloat32).view({4, 12});
  EXPECT_FALSE(
      adjacent_rows_view(wide.narrow(1, 0, 4), wide.narrow(1, 4, 4)).defined());  // strided
}

// The module runs the fused function with the model's own parameters: the same logits and
// gradients as the op-by-op formula on them.
TEST(SwiGluMlp, LlamaMlpModuleMatchesOpByOp) {
  Json j = {{"hidden_size", 32},        {"intermediate_size", 88},  {"num_hidden_layers", 1},
            {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"vocab_size", 97}};
  LlamaConfig c = parse_llama_config(j, "test");
  torch::manual_seed(8);
  LlamaMlp mlp(c);
  auto x = torch::randn({2, 6, 32}).requires_grad_(true);
  auto got = mlp(x);
  auto want =
      reference_mlp(x, mlp->gate_proj->weight, mlp->up_proj->weight, mlp->down_proj->weight);
  expect_close(got, want, 1e-6, "module forward");
  auto g = torch::autograd::grad({got.sum()}, {x, mlp->gate_proj->weight});
  auto r = torch::autograd::grad({want.sum()}, {x, mlp->gate_proj->weight});
  expect_close(g[0], r[0], 1e-6, "module dx");
  expect_close(g[1], r[1], 1e-6, "module d gate_proj");
}

}  // namespace
}  // namespace fabkit::trainer
