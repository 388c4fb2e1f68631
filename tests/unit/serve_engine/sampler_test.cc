// The sampler: greedy ties, temperature, top-k and top-p (HF's warpers' semantics), seeds.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "trainer/serve/engine/sampler.h"

namespace fabkit::serve {
namespace {

std::vector<float> log_probs(const std::vector<double>& p) {
  std::vector<float> out;
  for (double x : p) out.push_back(static_cast<float>(std::log(x)));
  return out;
}

std::map<int64_t, int> histogram(const std::vector<float>& logits, const SamplingParams& params,
                                 int draws, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::map<int64_t, int> counts;
  for (int i = 0; i < draws; ++i)
    ++counts[sample_token(logits.data(), static_cast<int64_t>(logits.size()), params, rng)];
  return counts;
}

TEST(Sampler, GreedyTakesTheLowestIdOfTiedMaxima) {
  std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(argmax_token(logits.data(), 4), 1);
  SamplingParams greedy;
  greedy.temperature = 0;
  std::mt19937_64 rng(1);
  EXPECT_EQ(sample_token(logits.data(), 4, greedy, rng), 1);
}

TEST(Sampler, TopKOneIsGreedy) {
  std::vector<float> logits = {0.1f, 0.3f, 0.25f, 0.29f};
  SamplingParams p;
  p.temperature = 1.0;
  p.top_k = 1;
  auto counts = histogram(logits, p, 200, 3);
  EXPECT_EQ(counts.size(), 1u);
  EXPECT_EQ(counts[1], 200);
}

TEST(Sampler, TopKKeepsTheKLargest) {
  auto logits = log_probs({0.1, 0.4, 0.2, 0.3});
  SamplingParams p;
  p.top_k = 2;
  auto counts = histogram(logits, p, 4000, 5);
  EXPECT_EQ(counts.count(0) + counts.count(2), 0u);
  // 0.4 : 0.3 renormalised = 4/7 : 3/7.
  EXPECT_NEAR(counts[1] / 4000.0, 4.0 / 7.0, 0.04);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingIt) {
  auto logits = log_probs({0.05, 0.5, 0.15, 0.3});
  SamplingParams p;
  p.top_p = 0.75;  // 0.5 + 0.3 reaches it; 0.5 alone does not
  auto counts = histogram(logits, p, 4000, 9);
  EXPECT_EQ(counts.count(0) + counts.count(2), 0u);
  EXPECT_NEAR(counts[1] / 4000.0, 0.5 / 0.8, 0.04);
  p.top_p = 0.4;  // the most likely token alone reaches it
  counts = histogram(logits, p, 500, 9);
  EXPECT_EQ(counts.size(), 1u);
  EXPECT_EQ(counts[1], 500);
  p.top_p = 0.96;  // all but the 0.05 token reach 0.95 only: all four are needed
  counts = histogram(logits, p, 8000, 9);
  EXPECT_EQ(counts.size(), 4u);
}

TEST(Sampler, TemperatureSharpensAndFlattens) {
  auto logits = log_probs({0.2, 0.8});
  SamplingParams p;
  p.temperature = 1.0;
  EXPECT_NEAR(histogram(logits, p, 4000, 1)[1] / 4000.0, 0.8, 0.03);
  p.temperature = 0.5;  // p^2 renormalised: 0.64 / 0.68
  EXPECT_NEAR(histogram(logits, p, 4000, 1)[1] / 4000.0, 0.64 / 0.68, 0.03);
  p.temperature = 100.0;  // nearly uniform
  EXPECT_NEAR(histogram(logits, p, 4000, 1)[1] / 4000.0, 0.5, 0.04);
}

TEST(Sampler, ASeedGivesTheSameDrawsAndAnotherSeedOthers) {
  std::vector<float> logits(50);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(std::sin(i * 1.7));
  SamplingParams p;
  auto draws = [&](uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<int64_t> out;
    for (int i = 0; i < 40; ++i) out.push_back(sample_token(logits.data(), 50, p, rng));
    return out;
  };
  EXPECT_EQ(draws(42), draws(42));
  EXPECT_NE(draws(42), draws(43));
}

TEST(Sampler, InvalidParamsAreNamed) {
  SamplingParams p;
  EXPECT_EQ(sampling_params_error(p), "");
  p.temperature = -0.5;
  EXPECT_NE(sampling_params_error(p).find("temperature"), std::string::npos);
  p = {};
  p.top_p = 0;
  EXPECT_NE(sampling_params_error(p).find("top_p"), std::string::npos);
  p = {};
  p.top_k = -1;
  EXPECT_NE(sampling_params_error(p).find("top_k"), std::string::npos);
}

}  // namespace
}  // namespace fabkit::serve
