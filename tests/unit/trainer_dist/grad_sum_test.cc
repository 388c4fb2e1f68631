// The gradient shard's one-pass store and sum of squares (trainer/parallel/grad_sum.h).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "trainer/parallel/grad_sum.h"

namespace fabkit::trainer {
namespace {

double reference_sum_squares(const std::vector<float>& x) {
  long double s = 0.0L;
  for (float v : x) s += static_cast<long double>(v) * v;
  return static_cast<double>(s);
}

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<float> x(n);
  for (float& v : x) v = d(gen);
  return x;
}

// Lengths around the eight lanes and the vector widths, so every tail runs.
const size_t kLengths[] = {0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4099};

TEST(GradSum, OverwriteStoresTheSourceAndReturnsItsSumOfSquares) {
  for (size_t n : kLengths) {
    const std::vector<float> src = random_floats(n, 1 + static_cast<unsigned>(n));
    std::vector<float> dst(n, 1e6f);  // stale values must vanish
    const double sq = store_grad_sum_squares(dst.data(), src.data(), static_cast<int64_t>(n), true);
    EXPECT_EQ(dst, src) << n;
    const double want = reference_sum_squares(src);
    EXPECT_NEAR(sq, want, 1e-13 * want) << n;
  }
}

TEST(GradSum, AddAccumulatesAndReturnsTheSumOfSquaresOfTheResult) {
  for (size_t n : kLengths) {
    const std::vector<float> src = random_floats(n, 2 + static_cast<unsigned>(n));
    std::vector<float> dst = random_floats(n, 3 + static_cast<unsigned>(n));
    std::vector<float> want_dst(n);
    for (size_t i = 0; i < n; ++i) want_dst[i] = dst[i] + src[i];
    const double sq =
        store_grad_sum_squares(dst.data(), src.data(), static_cast<int64_t>(n), false);
    EXPECT_EQ(dst, want_dst) << n;
    const double want = reference_sum_squares(want_dst);
    EXPECT_NEAR(sq, want, 1e-13 * want) << n;
    EXPECT_EQ(sum_squares(dst.data(), static_cast<int64_t>(n)), sq) << n;  // the same lane order
  }
}

TEST(GradSum, ANonFiniteGradientShowsInTheSum) {
  std::vector<float> src = random_floats(40, 9), dst(40);
  src[33] = std::nanf("");
  EXPECT_TRUE(std::isnan(store_grad_sum_squares(dst.data(), src.data(), 40, true)));
  src[33] = INFINITY;
  EXPECT_TRUE(std::isinf(sum_squares(src.data(), 40)));
}

}  // namespace
}  // namespace fabkit::trainer
