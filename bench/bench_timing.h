// What the benchmarks share: the median of their runs (the machine is noisy, so every figure is a
// median) and a wall-clock timer in milliseconds.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace fabkit::bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
double ms(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace fabkit::bench
