// The fused fp32 RoPE (rope_fp32.h) against the op-by-op form it replaces on the CPU
// (x * cos + roll(x, D/2) * signed_sin): values and the input's gradient, from q's strided view
// of a qkv buffer, with shared and per-batch tables.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "trainer/model/rope_fp32.h"

namespace fabkit::trainer {
namespace {

void check(int64_t table_batch, int threads) {
  torch::manual_seed(5);
  at::set_num_threads(threads);
  const int64_t b = 2, t = 7, h = 3, d = 8;
  // [B, T, (H + 2) * D] as the qkv GEMM writes it; q is a [B, H, T, D] view with strides.
  auto qkv = torch::randn({b, t, (h + 2) * d});
  auto cos = torch::randn({table_batch, 1, t, d});
  auto sin = torch::randn({table_batch, 1, t, d});
  auto g = torch::randn({b, h, t, d});
  auto a = qkv.clone().requires_grad_(true);
  auto r = qkv.clone().requires_grad_(true);
  auto view = [&](const at::Tensor& x) {
    return x.narrow(2, 0, h * d).view({b, t, h, d}).transpose(1, 2);
  };
  auto fused = rope_fp32(view(a), cos, sin);
  auto ref = torch::addcmul(view(r) * cos, torch::roll(view(r), d / 2, -1), sin);
  EXPECT_TRUE(fused.is_contiguous());
  EXPECT_LE((fused - ref).abs().max().item<double>(), 1e-6);
  fused.backward(g);
  ref.backward(g);
  EXPECT_LE((a.grad() - r.grad()).abs().max().item<double>(), 1e-6);
  EXPECT_EQ(a.grad().narrow(2, h * d, 2 * d).abs().max().item<float>(), 0.0f) << "k/v untouched";
  at::set_num_threads(1);
}

TEST(RopeFp32, MatchesOpByOpWithSharedTables) { check(1, 1); }
TEST(RopeFp32, MatchesOpByOpWithPerBatchTablesOnThreads) { check(2, 2); }

}  // namespace
}  // namespace fabkit::trainer
