#include "common/latency_histogram.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace fabkit {
namespace {

// Edges are compared after a JSON round trip; nlohmann writes doubles with round-trip precision,
// the tolerance only absorbs writers that print fewer digits.
bool same_edge(double got, double want) {
  return std::fabs(got - want) <= 1e-9 * std::max(1.0, want);
}

uint64_t checked_count(const Json& v, const std::string& field) {
  if (!v.is_number_integer())
    throw std::invalid_argument(field + ": " + v.dump() +
                                " is not an integer; counts are whole samples");
  if (!v.is_number_unsigned() && v.get<int64_t>() < 0)
    throw std::invalid_argument(field + ": " + v.dump() + " is negative; counts are >= 0");
  uint64_t c = v.get<uint64_t>();
  if (c > LatencyHistogram::kMaxCount)
    throw std::invalid_argument(field + ": " + v.dump() + " exceeds the limit of " +
                                std::to_string(LatencyHistogram::kMaxCount) + " samples");
  return c;
}

}  // namespace

double LatencyHistogram::lower_edge(int bucket) {
  if (bucket < 0 || bucket >= kBuckets)
    throw std::out_of_range("latency histogram bucket " + std::to_string(bucket));
  if (bucket == 0) return 0.0;
  return std::exp2(static_cast<double>(bucket - 1) / kBucketsPerOctave);
}

int LatencyHistogram::bucket_of(double us) {
  if (!(us >= 1.0)) return 0;  // also NaN
  if (us >= lower_edge(kOverflowBucket)) return kOverflowBucket;
  int b = static_cast<int>(std::floor(std::log2(us) * kBucketsPerOctave)) + 1;
  // log2 may round across an edge; the edges themselves decide.
  while (b > 1 && us < lower_edge(b)) --b;
  while (b < kOverflowBucket && us >= lower_edge(b + 1)) ++b;
  return b;
}

void LatencyHistogram::add(double us) {
  ++counts_[static_cast<size_t>(bucket_of(us))];
  ++total_;
}

void LatencyHistogram::add_count(int bucket, uint64_t n) {
  lower_edge(bucket);  // range check
  counts_[static_cast<size_t>(bucket)] += n;
  total_ += n;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  total_ += other.total_;
}

int LatencyHistogram::percentile_bucket(double p) const {
  if (total_ == 0) throw std::logic_error("percentile of an empty latency histogram");
  uint64_t rank = static_cast<uint64_t>(std::ceil(p * static_cast<double>(total_)));
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += counts_[static_cast<size_t>(b)];
    if (seen >= rank) return b;
  }
  return kOverflowBucket;  // p > 1: the largest sample's bucket at most
}

Json to_json(const LatencyHistogram& h) {
  int first = -1, last = -1;
  for (int b = 0; b < LatencyHistogram::kOverflowBucket; ++b)
    if (h.count(b) > 0) {
      if (first < 0) first = b;
      last = b;
    }
  Json edges = Json::array(), counts = Json::array();
  if (first >= 0) {
    for (int b = first; b <= last; ++b) {
      edges.push_back(LatencyHistogram::lower_edge(b));
      counts.push_back(h.count(b));
    }
    edges.push_back(LatencyHistogram::lower_edge(last + 1));
  }
  return {{"unit", "us"},
          {"edges", edges},
          {"counts", counts},
          {"overflow", h.count(LatencyHistogram::kOverflowBucket)}};
}

LatencyHistogram histogram_from_json(const Json& j, const std::string& where,
                                     int64_t expected_total) {
  auto bad = [&](const std::string& msg) { return std::invalid_argument(where + msg); };
  if (!j.is_object())
    throw bad(": must be an object {unit, edges, counts, overflow}, got " +
              std::string(j.type_name()));
  if (!j.contains("unit") || j["unit"] != "us") throw bad(".unit: must be \"us\"");
  for (const char* k : {"edges", "counts"})
    if (!j.contains(k) || !j[k].is_array()) throw bad(std::string(".") + k + ": must be an array");
  if (!j.contains("overflow")) throw bad(".overflow: missing");
  const Json& edges = j["edges"];
  const Json& counts = j["counts"];
  if (counts.size() > static_cast<size_t>(LatencyHistogram::kOverflowBucket))
    throw bad(".counts: " + std::to_string(counts.size()) + " buckets, the layout has at most " +
              std::to_string(LatencyHistogram::kOverflowBucket) + " below the overflow bucket");
  size_t want_edges = counts.empty() ? 0 : counts.size() + 1;
  if (edges.size() != want_edges)
    throw bad(".edges: " + std::to_string(edges.size()) + " edges for " +
              std::to_string(counts.size()) + " counts; expected " + std::to_string(want_edges));
  LatencyHistogram h;
  int first = 0;
  if (!counts.empty()) {
    if (!edges[0].is_number()) throw bad(".edges[0]: must be a number");
    first = LatencyHistogram::bucket_of(edges[0].get<double>());
    if (first == LatencyHistogram::kOverflowBucket ||
        first + static_cast<int>(counts.size()) > LatencyHistogram::kOverflowBucket)
      throw bad(".edges: the buckets run past 2^" + std::to_string(LatencyHistogram::kOctaves) +
                " µs, where only the overflow count may hold samples");
  }
  for (size_t k = 0; k < edges.size(); ++k) {
    double want = LatencyHistogram::lower_edge(first + static_cast<int>(k));
    const Json& e = edges[k];
    if (!e.is_number() || !same_edge(e.get<double>(), want))
      throw bad(".edges[" + std::to_string(k) + "]: " + e.dump() + " is not the layout's edge " +
                std::to_string(want) + " µs (" +
                std::to_string(LatencyHistogram::kBucketsPerOctave) +
                " log-spaced buckets per power of two from 1 µs)");
  }
  uint64_t sum = 0;
  std::vector<uint64_t> got(counts.size());
  for (size_t k = 0; k < counts.size(); ++k) {
    got[k] = checked_count(counts[k], where + ".counts[" + std::to_string(k) + "]");
    sum += got[k];
  }
  uint64_t overflow = checked_count(j["overflow"], where + ".overflow");
  sum += overflow;
  if (expected_total >= 0 && sum != static_cast<uint64_t>(expected_total))
    throw bad(".counts: the counts and overflow sum to " + std::to_string(sum) + ", not the " +
              std::to_string(expected_total) + " samples taken");
  for (size_t k = 0; k < got.size(); ++k) h.add_count(first + static_cast<int>(k), got[k]);
  h.add_count(LatencyHistogram::kOverflowBucket, overflow);
  return h;
}

}  // namespace fabkit
