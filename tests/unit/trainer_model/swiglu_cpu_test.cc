// SwiGLU's fused fp32 CPU passes (trainer/model/swiglu_cpu.h) against ATen's silu, product and
// silu_backward element by element, over gate values from -120 to 120 (both sides of the
// sigmoid's e^-|g| form, and past where e^-|g| underflows), row widths with and without a tail.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>

#include "trainer/model/swiglu_cpu.h"

namespace fabkit::trainer {
namespace {

// |a - b| <= rel * scale + abs_floor, element by element (scale: |b| unless given); the worst
// index is reported.
void expect_elementwise_close(const torch::Tensor& a, const torch::Tensor& b, double rel,
                              double abs_floor, const std::string& what,
                              const torch::Tensor& scale = {}) {
  const torch::Tensor ad = a.to(torch::kFloat64), bd = b.to(torch::kFloat64);
  const torch::Tensor sd = scale.defined() ? scale.to(torch::kFloat64) : bd.abs();
  const torch::Tensor excess = (ad - bd).abs() - (sd * rel + abs_floor);
  const int64_t worst = excess.argmax().item<int64_t>();
  EXPECT_LE(excess.reshape(-1)[worst].item<double>(), 0.0)
      << what << " at " << worst << ": " << ad.reshape(-1)[worst].item<double>() << " vs ATen's "
      << bd.reshape(-1)[worst].item<double>();
}

struct Case {
  torch::Tensor gate_up, gate, up;
  int64_t rows, inter;
};

Case make_case(int64_t rows, int64_t inter) {
  torch::manual_seed(3);
  Case c{torch::empty({rows, 2 * inter}), {}, {}, rows, inter};
  c.gate = c.gate_up.narrow(1, 0, inter);
  c.up = c.gate_up.narrow(1, inter, inter);
  // Gates sweep -120..120 row-major, so every lane and the tail see both signs and the extremes.
  c.gate.copy_(torch::linspace(-120.0, 120.0, rows * inter).view({rows, inter}));
  c.gate.narrow(0, 0, rows / 2).mul_(0.05);  // half the rows in -6..6, where the curve bends
  c.up.copy_(torch::randn({rows, inter}));
  return c;
}

// A few ulp of fp32 relative (the exp polynomial and a different but equivalent sigmoid form),
// and an absolute floor far below anything a gradient or activation would notice: below -87 the
// kernels' e^-|g| stops at ~1e-38 where ATen's goes on to denormals and 0.
constexpr double kRel = 8e-7, kFloor = 1e-30;

TEST(SwiGluCpu, ForwardMatchesAtenSiluTimesUp) {
  for (int64_t inter : {16, 24, 37}) {
    Case c = make_case(20, inter);
    torch::Tensor h = torch::empty({c.rows, inter});
    swiglu_forward_fp32(c.gate_up.data_ptr<float>(), h.data_ptr<float>(), c.rows, inter);
    expect_elementwise_close(h, torch::silu(c.gate) * c.up, kRel, kFloor,
                             "h, I=" + std::to_string(inter));
  }
}

TEST(SwiGluCpu, BackwardMatchesAtenSiluBackwardAndTheProduct) {
  for (int64_t inter : {16, 24, 37}) {
    Case c = make_case(20, inter);
    const torch::Tensor dh = torch::randn({c.rows, inter});
    torch::Tensor d = torch::empty({c.rows, 2 * inter}), h = torch::empty({c.rows, inter});
    swiglu_backward_fp32(c.gate_up.data_ptr<float>(), dh.data_ptr<float>(), d.data_ptr<float>(),
                         h.data_ptr<float>(), c.rows, inter);
    const std::string at = ", I=" + std::to_string(inter);
    // d gate = (dh·u)·σ·(1 + g·(1 − σ)): where the last factor crosses zero (g near −1.28) it
    // cancels, so its error is an ulp of its terms', not of the result: the scale is the terms'.
    const torch::Tensor g64 = c.gate.to(torch::kFloat64), s64 = torch::sigmoid(g64);
    const torch::Tensor terms =
        (dh * c.up).to(torch::kFloat64).abs() * s64 * (1.0 + g64.abs() * (1.0 - s64));
    expect_elementwise_close(d.narrow(1, 0, inter), torch::silu_backward(dh * c.up, c.gate), kRel,
                             kFloor, "d gate" + at, terms);
    expect_elementwise_close(d.narrow(1, inter, inter), dh * torch::silu(c.gate), kRel, kFloor,
                             "d up" + at);
    expect_elementwise_close(h, torch::silu(c.gate) * c.up, kRel, kFloor, "h" + at);
    // Without h the gradients are the same and nothing else is written.
    torch::Tensor d2 = torch::empty_like(d);
    swiglu_backward_fp32(c.gate_up.data_ptr<float>(), dh.data_ptr<float>(), d2.data_ptr<float>(),
                         nullptr, c.rows, inter);
    EXPECT_TRUE(torch::equal(d, d2)) << at;
  }
}

TEST(SwiGluCpu, ANanGateGivesNanNotAFiniteValue) {
  Case c = make_case(2, 24);
  c.gate.index_put_({0, 3}, std::nanf(""));   // in the vector part
  c.gate.index_put_({1, 20}, std::nanf(""));  // in the tail
  torch::Tensor h = torch::empty({2, 24});
  swiglu_forward_fp32(c.gate_up.data_ptr<float>(), h.data_ptr<float>(), 2, 24);
  EXPECT_TRUE(std::isnan(h.index({0, 3}).item<float>()));
  EXPECT_TRUE(std::isnan(h.index({1, 20}).item<float>()));
  EXPECT_EQ(torch::isnan(h).sum().item<int64_t>(), 2);
}

}  // namespace
}  // namespace fabkit::trainer
