// Sixteen-float vectors for the trainer's hand-written CPU kernels (cross_entropy_cpu.cc,
// swiglu_cpu.cc): GCC's vector extension (one AVX-512 register, two AVX2 or four SSE ones), an
// expf for non-positive arguments, and the target clones each kernel is built as. ATen's own
// Vectorized<float> is compiled per CPU capability inside libtorch and its headers are not meant
// for code outside it; LibTorch exposes no SwiGLU or cross-entropy-from-bf16 kernel to call.
// Include only from a kernel's .cc: it turns off -Wpsabi for the rest of that file.
#pragma once

#include <cstdint>
#include <cstring>

namespace fabkit::trainer::cpu_vec {

typedef float VecF __attribute__((vector_size(64)));
typedef int32_t VecI __attribute__((vector_size(64)));
constexpr int kLanes = 16;

// Always inlined into each clone, so no 64-byte vector ever crosses a call (whose ABI would
// differ between the clones, which is all GCC's -Wpsabi warns of).
#pragma GCC diagnostic ignored "-Wpsabi"
#define FABKIT_VEC_INLINE inline __attribute__((always_inline))

FABKIT_VEC_INLINE VecF load(const float* p) {
  VecF v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
FABKIT_VEC_INLINE void store(float* p, VecF v) { std::memcpy(p, &v, sizeof v); }
FABKIT_VEC_INLINE VecF splat(float x) { return VecF{} + x; }

// expf for x <= 0: Cephes' range reduction and polynomial (~1 ulp), 2^n built in the exponent
// bits. Below -87 the result is clamped to ~1e-38 instead of a denormal or 0 (and -inf gives that
// too): beside the 1 it is added to or the row sums it joins, nothing visible. NaN stays NaN.
FABKIT_VEC_INLINE VecF exp_nonpositive(VecF x) {
  x = x < splat(-87.0f) ? splat(-87.0f) : x;
  const VecF t = x * 1.44269504088896341f + 0.5f;
  const VecF tr = __builtin_convertvector(__builtin_convertvector(t, VecI), VecF);  // trunc
  // floor = trunc - 1 where trunc rounded up (t < 0 with a fraction); the mask is -1 there.
  const VecF n = tr + __builtin_convertvector(tr > t, VecF);
  VecF r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  VecF p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const VecI bits = (__builtin_convertvector(n, VecI) + 127) << 23;
  VecF scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

}  // namespace fabkit::trainer::cpu_vec

// Each kernel is also built for AVX2 and AVX-512 (picked at load time by the CPU): the
// wheel-style build targets baseline x86-64.
#if defined(__x86_64__) && defined(__GNUC__)
#define FABKIT_VEC_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FABKIT_VEC_CLONES
#endif
