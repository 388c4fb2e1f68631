// A histogram of latency samples with fixed, log-spaced bucket edges in microseconds, so that every
// agent buckets alike and histograms from different links and hosts can be merged by adding counts.
//
// Layout (the same everywhere, never sent over the wire; receivers rebuild it and check the edges):
//   bucket 0                  [0, 1 µs)
//   bucket 1 .. 8·20          [2^((i-1)/8), 2^(i/8)) µs: 8 buckets per power of two, 1 µs .. 2^20
//   µs bucket 8·20 + 1           [2^20 µs (≈1.05 s), ∞): the overflow bucket
// Eight buckets per octave make each bucket about 9% wide, finer than the run-to-run noise of a
// round trip, while a whole layout is 162 counters.
//
// JSON (pair links[].rtt_histogram, the agent's tcp_measure rtt.histogram; docs/json/pair.md):
//   {"unit":"us", "edges":[e0..ek], "counts":[c0..ck-1], "overflow":n}
// where counts[i] counts samples in [edges[i], edges[i+1]), the buckets run from the first to the
// last non-empty one below the overflow bucket, and overflow counts samples >= 2^20 µs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/json.h"

namespace fabkit {

class LatencyHistogram {
 public:
  static constexpr int kBucketsPerOctave = 8;
  static constexpr int kOctaves = 20;  // 1 µs .. 2^20 µs
  static constexpr int kBuckets = kBucketsPerOctave * kOctaves + 2;
  static constexpr int kOverflowBucket = kBuckets - 1;
  // Counts in a received histogram are bounded so a sum can never overflow.
  static constexpr uint64_t kMaxCount = uint64_t{1} << 40;

  // Lower edge of bucket i in µs (0 for bucket 0); upper edge = lower_edge(i + 1); the overflow
  // bucket has no upper edge.
  static double lower_edge(int bucket);
  // The bucket a sample falls in; negative or NaN samples count in bucket 0.
  static int bucket_of(double us);

  void add(double us);
  void add_count(int bucket,
                 uint64_t n);  // n samples known only by their bucket (throws out_of_range)
  void merge(const LatencyHistogram& other);
  uint64_t count(int bucket) const { return counts_[static_cast<size_t>(bucket)]; }
  uint64_t total() const { return total_; }
  // Nearest-rank percentile p in (0, 1]: the bucket holding the smallest sample with at least p
  // of the samples at or below it (the exact percentile lies in [lower_edge, upper edge)).
  // Throws std::logic_error on an empty histogram.
  int percentile_bucket(double p) const;

 private:
  std::vector<uint64_t> counts_ = std::vector<uint64_t>(kBuckets, 0);
  uint64_t total_ = 0;
};

Json to_json(const LatencyHistogram& h);
// Parses and checks a histogram received from elsewhere (an agent's answer, a report file):
// unit "us", edges exactly the fixed layout's, at most kBuckets counts, each an integer in
// [0, kMaxCount], overflow likewise; when expected_total >= 0 the counts and overflow must sum to
// it. Throws std::invalid_argument naming `where` and the field ("rtt.histogram.counts[3]: -1 is
// negative ...").
LatencyHistogram histogram_from_json(const Json& j, const std::string& where,
                                     int64_t expected_total = -1);

}  // namespace fabkit
