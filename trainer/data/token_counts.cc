#include "trainer/data/token_counts.h"

#include <algorithm>
#include <numeric>

#include "common/errors.h"
#include "trainer/data/sampler.h"
#include "trainer/model/ignore_label.h"

namespace fabkit::trainer {

std::vector<TokenCounts> example_token_counts(const std::vector<Example>& examples) {
  std::vector<TokenCounts> out;
  out.reserve(examples.size());
  for (const Example& e : examples) {
    TokenCounts c;
    for (size_t t = 1; t < e.labels.size(); ++t) c.target += e.labels[t] != kIgnoreLabel;
    c.real = std::accumulate(e.attention_mask.begin(), e.attention_mask.end(), int64_t{0});
    out.push_back(c);
  }
  return out;
}

std::vector<TokenCounts> epoch_batch_token_counts(const std::vector<TokenCounts>& per_example,
                                                  uint64_t seed, int64_t epoch, int replicas,
                                                  size_t batch_size) {
  FABKIT_ENFORCE(batch_size >= 1 && replicas >= 1, "batch_size and replicas must be >= 1");
  const std::vector<size_t> order = epoch_order(per_example.size(), seed, epoch);
  const auto world = static_cast<size_t>(replicas);
  // shard_indices' rule (and its error): every replica gets floor(n / replicas) examples.
  const size_t per_replica = shard_indices(order, 0, replicas).size();
  std::vector<TokenCounts> out;
  for (size_t first = 0; first < per_replica; first += batch_size) {
    const size_t end = std::min(per_replica, first + batch_size);
    TokenCounts sum;
    for (size_t k = first * world; k < end * world; ++k) sum += per_example[order[k]];
    out.push_back(sum);
  }
  return out;
}

uint64_t token_counts_fingerprint(const std::vector<TokenCounts>& per_example) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](uint64_t v) {
    for (int byte = 0; byte < 8; ++byte) {
      h ^= (v >> (8 * byte)) & 0xff;
      h *= 0x100000001b3ull;
    }
  };
  mix(per_example.size());
  for (const TokenCounts& c : per_example) {
    mix(static_cast<uint64_t>(c.target));
    mix(static_cast<uint64_t>(c.real));
  }
  return h;
}

}  // namespace fabkit::trainer
