// common/latency_histogram: the fixed bucket layout, merge, percentiles against exact ones, and the
// checks on a histogram received from an agent or read from a report.
#include "common/latency_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace fabkit {
namespace {

using H = LatencyHistogram;

TEST(LatencyHistogram, EdgesAreEightPerPowerOfTwoFromOneMicrosecond) {
  EXPECT_EQ(H::lower_edge(0), 0.0);
  EXPECT_EQ(H::lower_edge(1), 1.0);
  EXPECT_DOUBLE_EQ(H::lower_edge(9), 2.0);
  EXPECT_DOUBLE_EQ(H::lower_edge(5), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(H::lower_edge(H::kOverflowBucket), 1048576.0);
  for (int b = 1; b < H::kOverflowBucket; ++b) EXPECT_LT(H::lower_edge(b), H::lower_edge(b + 1));
  EXPECT_THROW(H::lower_edge(H::kBuckets), std::out_of_range);
  EXPECT_THROW(H::lower_edge(-1), std::out_of_range);
}

TEST(LatencyHistogram, SamplesOnAnEdgeBelongToTheBucketAbove) {
  for (int b = 1; b <= H::kOverflowBucket; ++b) {
    double e = H::lower_edge(b);
    EXPECT_EQ(H::bucket_of(e), b) << e;
    EXPECT_EQ(H::bucket_of(std::nextafter(e, 0.0)), b - 1) << e;
  }
  EXPECT_EQ(H::bucket_of(0.0), 0);
  EXPECT_EQ(H::bucket_of(0.999), 0);
  EXPECT_EQ(H::bucket_of(-5.0), 0);
  EXPECT_EQ(H::bucket_of(std::nan("")), 0);
  EXPECT_EQ(H::bucket_of(3e6), H::kOverflowBucket);
  EXPECT_EQ(H::bucket_of(INFINITY), H::kOverflowBucket);
}

TEST(LatencyHistogram, MergeAddsCounts) {
  H a, b;
  a.add(10);
  a.add(10.1);
  b.add(10.05);
  b.add(5e6);
  a.merge(b);
  EXPECT_EQ(a.total(), 4u);
  EXPECT_EQ(a.count(H::bucket_of(10)), 3u);
  EXPECT_EQ(a.count(H::kOverflowBucket), 1u);
}

TEST(LatencyHistogram, PercentilesLandInTheBucketOfTheExactNearestRank) {
  std::mt19937 rng(7);
  std::lognormal_distribution<double> rtt(std::log(40.0), 0.6);  // ~40 µs with a long tail
  std::vector<double> v;
  H h;
  for (int i = 0; i < 5000; ++i) {
    double x = rtt(rng);
    v.push_back(x);
    h.add(x);
  }
  std::sort(v.begin(), v.end());
  for (double p : {0.01, 0.5, 0.9, 0.99, 1.0}) {
    double exact = v[static_cast<size_t>(std::ceil(p * v.size())) - 1];
    int b = h.percentile_bucket(p);
    EXPECT_LE(H::lower_edge(b), exact) << p;
    EXPECT_LT(exact, H::lower_edge(b + 1)) << p;
  }
  EXPECT_THROW(H().percentile_bucket(0.5), std::logic_error);
}

TEST(LatencyHistogram, JsonRoundTripKeepsOnlyTheOccupiedRange) {
  H h;
  h.add(20);
  h.add(20);
  h.add(80);
  h.add(2e6);
  Json j = to_json(h);
  EXPECT_EQ(j["unit"], "us");
  ASSERT_EQ(j["counts"].size(), 17u);  // from 20 µs's bucket (35) to 80 µs's (51)
  EXPECT_EQ(j["edges"].size(), 18u);
  EXPECT_EQ(j["counts"].front(), 2);
  EXPECT_EQ(j["counts"].back(), 1);
  EXPECT_EQ(j["overflow"], 1);
  H back = histogram_from_json(Json::parse(j.dump()), "h", 4);
  EXPECT_EQ(back.total(), 4u);
  for (int b = 0; b < H::kBuckets; ++b) EXPECT_EQ(back.count(b), h.count(b)) << b;

  Json empty = to_json(H());
  EXPECT_TRUE(empty["counts"].empty());
  EXPECT_TRUE(empty["edges"].empty());
  EXPECT_EQ(histogram_from_json(empty, "h", 0).total(), 0u);
}

std::string error_of(const Json& j, int64_t expected = -1) {
  try {
    histogram_from_json(j, "rtt.histogram", expected);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(LatencyHistogram, RejectsBadHistogramsNamingTheField) {
  H h;
  for (int i = 0; i < 10; ++i) h.add(30 + i);
  const Json good = to_json(h);
  ASSERT_EQ(error_of(good, 10), "");

  EXPECT_NE(error_of(good, 11).find(
                "rtt.histogram.counts: the counts and overflow sum to 10, not the 11"),
            std::string::npos);
  Json j = good;
  j["counts"][0] = -1;
  EXPECT_NE(error_of(j).find("rtt.histogram.counts[0]: -1 is negative"), std::string::npos);
  j = good;
  j["counts"][1] = 2.5;
  EXPECT_NE(error_of(j).find("rtt.histogram.counts[1]: 2.5 is not an integer"), std::string::npos);
  j = good;
  j["counts"][0] = uint64_t{1} << 50;
  EXPECT_NE(error_of(j).find("exceeds the limit"), std::string::npos);
  j = good;
  j["overflow"] = -3;
  EXPECT_NE(error_of(j).find("rtt.histogram.overflow: -3 is negative"), std::string::npos);
  j = good;
  j["edges"][1] = 33.0;  // not a layout edge
  EXPECT_NE(error_of(j).find("rtt.histogram.edges[1]: 33.0 is not the layout's edge"),
            std::string::npos);
  j = good;
  j["edges"].erase(j["edges"].size() - 1);
  EXPECT_NE(error_of(j).find("rtt.histogram.edges: "), std::string::npos);
  j = good;
  j["unit"] = "ms";
  EXPECT_NE(error_of(j).find("rtt.histogram.unit"), std::string::npos);
  EXPECT_NE(error_of(Json::array()).find("must be an object"), std::string::npos);
  j = good;
  j.erase("overflow");
  EXPECT_NE(error_of(j).find("rtt.histogram.overflow: missing"), std::string::npos);

  // More buckets than the layout has: refused by size before anything is allocated per bucket.
  Json big = {{"unit", "us"}, {"edges", Json::array()}, {"counts", Json::array()}, {"overflow", 0}};
  for (int b = 0; b <= H::kBuckets; ++b) big["counts"].push_back(0);
  EXPECT_NE(error_of(big).find("rtt.histogram.counts: 163 buckets, the layout has at most 161"),
            std::string::npos);
  // Buckets that would run into the overflow bucket.
  Json high = {{"unit", "us"},
               {"edges", {H::lower_edge(160), H::lower_edge(161), H::lower_edge(161) * 1.1}},
               {"counts", {1, 1}},
               {"overflow", 0}};
  EXPECT_NE(error_of(high).find("run past 2^20"), std::string::npos);
}

}  // namespace
}  // namespace fabkit
