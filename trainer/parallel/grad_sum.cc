#include "trainer/parallel/grad_sum.h"

namespace fabkit::trainer {
namespace {

// Eight independent double partial sums: one serial chain of dependent adds is latency-bound
// (4 cycles an element); eight lanes vectorise (one AVX-512 register, two AVX2 ones) and keep a
// fixed assignment of elements to lanes, so every clone sums in the same order.
constexpr int kLanes = 8;

double total(const double (&lanes)[kLanes]) {
  double sq = 0.0;
  for (const double l : lanes) sq += l;
  return sq;
}

}  // namespace

// Also built for AVX2 and AVX-512 (picked at load time by the CPU: the wheel-style build targets
// baseline x86-64, whose SSE2 holds two doubles). The float add is the same IEEE add in every
// clone and the squares are exact in double, so the clones agree to the bit.
#if defined(__x86_64__) && defined(__GNUC__)
#define FABKIT_GRAD_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FABKIT_GRAD_CLONES
#endif

FABKIT_GRAD_CLONES
double store_grad_sum_squares(float* __restrict dst, const float* __restrict src, int64_t n,
                              bool overwrite) {
  double lanes[kLanes] = {};
  int64_t i = 0;
  if (overwrite) {
    for (; i + kLanes <= n; i += kLanes) {
      for (int l = 0; l < kLanes; ++l) {
        const float v = src[i + l];
        dst[i + l] = v;
        lanes[l] += static_cast<double>(v) * v;
      }
    }
  } else {
    for (; i + kLanes <= n; i += kLanes) {
      for (int l = 0; l < kLanes; ++l) {
        const float v = dst[i + l] + src[i + l];
        dst[i + l] = v;
        lanes[l] += static_cast<double>(v) * v;
      }
    }
  }
  for (; i < n; ++i) {
    const float v = overwrite ? src[i] : dst[i] + src[i];
    dst[i] = v;
    lanes[i % kLanes] += static_cast<double>(v) * v;
  }
  return total(lanes);
}

FABKIT_GRAD_CLONES
double sum_squares(const float* x, int64_t n) {
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += static_cast<double>(x[i + l]) * x[i + l];
  }
  for (; i < n; ++i) lanes[i % kLanes] += static_cast<double>(x[i]) * x[i];
  return total(lanes);
}

}  // namespace fabkit::trainer
