#include "trainer/serve/engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace fabkit::serve {

int64_t argmax_token(const float* logits, int64_t vocab) {
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i)
    if (logits[i] > logits[best]) best = i;
  return best;
}

double uniform_01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

std::string sampling_params_error(const SamplingParams& params) {
  if (!(params.temperature >= 0) || !std::isfinite(params.temperature))
    return "temperature is " + std::to_string(params.temperature) +
           "; it must be a finite number >= 0 (0 = greedy)";
  if (!(params.top_p > 0 && params.top_p <= 1))
    return "top_p is " + std::to_string(params.top_p) + "; it must be in (0, 1]";
  if (params.top_k < 0)
    return "top_k is " + std::to_string(params.top_k) + "; it must be >= 0 (0 = off)";
  return "";
}

int64_t sample_token(const float* logits, int64_t vocab, const SamplingParams& params,
                     std::mt19937_64& rng) {
  if (params.temperature == 0) return argmax_token(logits, vocab);
  constexpr float kRemoved = -std::numeric_limits<float>::infinity();
  // HF divides the fp32 scores by the temperature (TemperatureLogitsWarper).
  const auto temperature = static_cast<float>(params.temperature);
  std::vector<float> scores(logits, logits + vocab);
  for (auto& s : scores) s /= temperature;

  if (params.top_k > 0 && params.top_k < vocab) {
    // TopKLogitsWarper: remove scores below the k-th largest (ties with it are kept).
    std::vector<float> sorted(scores);
    std::nth_element(sorted.begin(), sorted.begin() + (params.top_k - 1), sorted.end(),
                     std::greater<float>());
    const float kth = sorted[params.top_k - 1];
    for (auto& s : scores)
      if (s < kth) s = kRemoved;
  }

  if (params.top_p < 1.0) {
    // TopPLogitsWarper: sort ascending, remove the tokens whose cumulative probability is
    // <= 1 - top_p, always keeping the most likely one. What remains is the smallest set of top
    // tokens whose probability reaches top_p.
    std::vector<int64_t> order(vocab);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return scores[a] < scores[b]; });
    const float top = scores[order.back()];
    double total = 0;
    for (int64_t i : order) total += std::exp(static_cast<double>(scores[i] - top));
    double cumulative = 0;
    for (int64_t r = 0; r + 1 < vocab; ++r) {
      const int64_t i = order[r];
      cumulative += std::exp(static_cast<double>(scores[i] - top)) / total;
      if (cumulative > 1.0 - params.top_p) break;
      scores[i] = kRemoved;
    }
  }

  // softmax, then invert the CDF at one uniform draw.
  const float top = *std::max_element(scores.begin(), scores.end());
  std::vector<double> weights(vocab);
  double total = 0;
  for (int64_t i = 0; i < vocab; ++i)
    total += weights[i] = std::exp(static_cast<double>(scores[i] - top));
  const double target = uniform_01(rng) * total;
  double cumulative = 0;
  int64_t last_kept = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    if (weights[i] == 0) continue;
    last_kept = i;
    cumulative += weights[i];
    if (target < cumulative) return i;
  }
  return last_kept;  // rounding left target at the very top
}

}  // namespace fabkit::serve
