// The matrix judge's noise bar (slurm/matrix_judge.h): healthy links spread by the measured noise
// are not blamed, a tight fabric keeps --slow-fraction, and the 64-host netns runs replayed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "common/json_read.h"
#include "slurm/matrix_judge.h"
#include "slurm/schedule.h"
#include "tests/unit/slurm/numbered_hosts.h"

namespace fabkit::slurm {
namespace {

// Every pair of n nodes at 10 Gbit/s times exp(sigma x a standard normal), seeded (Box-Muller on
// mt19937's raw output, which the standard fixes, unlike its distributions); `bad` at `factor`.
std::vector<PairMeasurement> noisy(int n, double sigma, NodePair bad, double factor,
                                   uint32_t seed = 7) {
  std::mt19937 rng(seed);
  auto uniform = [&] { return (rng() + 0.5) / 4294967296.0; };
  std::vector<PairMeasurement> ms;
  for (const auto& r : round_robin(n))
    for (const auto& p : r.pairs) {
      double z = std::sqrt(-2 * std::log(uniform())) * std::cos(2 * M_PI * uniform());
      PairMeasurement m;
      m.a = p.a;
      m.b = p.b;
      m.ok = true;
      m.gbit_s = 10 * std::exp(sigma * z) * (p == bad ? factor : 1.0);
      m.source = "tcp single stream";
      ms.push_back(m);
    }
  return ms;
}

std::vector<std::string> blamed(const MatrixVerdict& v) {
  std::vector<std::string> c;
  for (const auto& f : v.findings)
    if (f.severity == Severity::kFail) c.push_back(f.code + " " + f.subject);
  return c;
}

bool has(const MatrixVerdict& v, const std::string& code) {
  for (const auto& f : v.findings)
    if (f.code == code) return true;
  return false;
}

TEST(MatrixNoise, HealthyLinksWithinTheirSpreadAreNotBlamed) {
  // sigma 0.5: what 64 netns hosts on 2 cores measured (0.41-0.53); the bad link 0.03 x.
  for (uint32_t seed : {1u, 2u, 3u, 4u, 5u}) {
    SCOPED_TRACE(seed);
    auto ms = noisy(64, 0.5, {1, 2}, 0.03, seed);
    // No re-test here: one pass decides, so the bar is the single-pass one (4.4 sigma at 2016).
    MatrixOptions single;
    single.retest = false;
    auto v = judge_matrix(numbered_hosts(64), ms, single);
    EXPECT_EQ(blamed(v), std::vector<std::string>{"cluster.link_slow n1<->n2"});
    ASSERT_TRUE(v.link_spread);
    EXPECT_EQ(v.link_spread->links, 2016);
    EXPECT_NEAR(v.link_spread->sigma, 0.5, 0.05);
    EXPECT_NEAR(v.link_spread->sigmas, 4.42, 0.01);
    EXPECT_LT(v.link_fraction, 0.5);
    EXPECT_DOUBLE_EQ(v.link_fraction, v.link_spread->noise_bar);
    EXPECT_TRUE(has(v, "cluster.link_spread_wide"));
    // The fixed fraction alone blames healthy links in that tail: what the bar is for.
    MatrixOptions fixed = single;
    fixed.noise_sigmas = 0;
    auto old = judge_matrix(numbered_hosts(64), ms, fixed);
    EXPECT_GT(blamed(old).size(), 5u);
    EXPECT_FALSE(old.link_spread);
    EXPECT_FALSE(has(old, "cluster.link_spread_wide"));
  }
}

TEST(MatrixNoise, ATightFabricKeepsTheSlowFraction) {
  // sigma 0.03, a healthy InfiniBand fabric's spread: a link at 45% is named.
  auto v = judge_matrix(numbered_hosts(32), noisy(32, 0.03, {3, 4}, 0.45), {});
  EXPECT_EQ(blamed(v), std::vector<std::string>{"cluster.link_slow n3<->n4"});
  ASSERT_TRUE(v.link_spread);
  EXPECT_GT(v.link_spread->noise_bar, 0.5);
  EXPECT_DOUBLE_EQ(v.link_fraction, 0.5);
  EXPECT_FALSE(has(v, "cluster.link_spread_wide"));
}

TEST(MatrixNoise, FewLinksGiveNoSpread) {
  // 6 nodes, 15 links: below noise_min_links the bar is --slow-fraction alone.
  auto v = judge_matrix(numbered_hosts(6), noisy(6, 0.5, {1, 2}, 0.03), {});
  EXPECT_FALSE(v.link_spread);
  EXPECT_DOUBLE_EQ(v.link_fraction, 0.5);
}

TEST(MatrixNoise, TheReTestIsJudgedByTheSameBar) {
  auto ms = noisy(64, 0.5, {1, 2}, 0.03);
  MatrixOptions single;  // the other links have no re-test figure: one pass decides for them
  single.retest = false;
  const double bar = judge_matrix(numbered_hosts(64), ms, single).link_fraction;
  for (auto& m : ms)
    if (m.a == 1 && m.b == 2) {
      m.retested = true;
      m.retest_ok = true;
      m.retest_gbit_s = 10 * (bar + 0.5) / 2;  // above the noise bar, below --slow-fraction
    }
  auto v = judge_matrix(numbered_hosts(64), ms, single);
  EXPECT_TRUE(blamed(v).empty()) << ::testing::PrintToString(blamed(v));
  EXPECT_TRUE(has(v, "cluster.link_flaky"));
}

// The first pass of a real 64-host run (bench/cluster/testdata, README there: h0<->h1 shaped to
// 100 Mbit/s, every other link healthy), judged again: the links it flags for the re-test.
std::vector<std::string> first_pass_flags(const std::string& file, double noise_sigmas,
                                          int* flagged_count) {
  const std::string path = std::string(FABKIT_SIM_TESTDATA) + "/" + file;
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  Json doc = parse_json(ss.str(), path);
  const int n = doc.at("n").get<int>();
  std::vector<std::string> hs;
  for (int i = 0; i < n; ++i) hs.push_back("h" + std::to_string(i));
  std::vector<PairMeasurement> ms;
  for (const auto& row : doc.at("pairs").at("rows")) {
    PairMeasurement m;
    m.a = std::stoi(row[0].get<std::string>().substr(1));
    m.b = std::stoi(row[1].get<std::string>().substr(1));
    m.ok = row[3].is_number();
    if (m.ok) m.gbit_s = row[3].get<double>();
    ms.push_back(m);
  }
  MatrixOptions o;
  o.noise_sigmas = noise_sigmas;
  auto v = judge_matrix(hs, ms, o);
  std::vector<std::string> flagged;
  for (const auto& l : v.links)
    if (l.state == "slow") flagged.push_back(hs[l.a] + "<->" + hs[l.b]);
  *flagged_count = static_cast<int>(flagged.size());
  return flagged;
}

TEST(MatrixNoise, SixtyFourNetnsHostsEightAtOnceFlagTheShapedLinkAndFewOthers) {
  // sigma 0.41 there: the bar is 0.30 x (3 sigma at 2016 links with the re-test). The shaped link
  // (0.03 x) and 21 healthy links at 0.20-0.30 x go to the re-test; --slow-fraction alone sent
  // 169, and 46 of them were slow again when re-tested (the run's verdict: 46 false blames).
  int with_bar = 0, fixed = 0;
  auto flagged = first_pass_flags("netns-64-parallel8.json", -1, &with_bar);
  EXPECT_NE(std::find(flagged.begin(), flagged.end(), "h0<->h1"), flagged.end());
  EXPECT_EQ(with_bar, 22);
  first_pass_flags("netns-64-parallel8.json", 0, &fixed);
  EXPECT_EQ(fixed, 169);
}

TEST(MatrixNoise, SixtyFourNetnsHostsThirtyTwoAtOnceStillFlagTheShapedLink) {
  // 32 pair runs at once on 2 cores: sigma 0.53 and glitches to 0 Gbit/s; the shaped link at 0.14 x
  // its nodes' figure is under the bar (0.21 x), with fewer others flagged than the fixed
  // fraction's.
  int with_bar = 0, fixed = 0;
  auto flagged = first_pass_flags("netns-64.json", -1, &with_bar);
  EXPECT_NE(std::find(flagged.begin(), flagged.end(), "h0<->h1"), flagged.end());
  first_pass_flags("netns-64.json", 0, &fixed);
  EXPECT_LT(with_bar * 5, fixed) << with_bar << " flagged with the bar, " << fixed << " without";
}

}  // namespace
}  // namespace fabkit::slurm
