#include "trainer/data/sampler.h"

#include <numeric>
#include <random>
#include <string>

#include "common/errors.h"

namespace fabkit::trainer {
namespace {

std::vector<size_t> permutation(size_t n, uint64_t stream_seed) {
  std::vector<size_t> p(n);
  std::iota(p.begin(), p.end(), size_t{0});
  std::mt19937_64 gen(stream_seed);
  // Fisher-Yates with a plain modulo: the bias is < n / 2^64, irrelevant for data order.
  for (size_t i = n; i > 1; --i) std::swap(p[i - 1], p[gen() % i]);
  return p;
}

// splitmix64 finaliser: decorrelates nearby (seed, epoch) pairs before seeding the generator.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

std::vector<size_t> epoch_order(size_t n, uint64_t seed, int64_t epoch) {
  return permutation(n, mix(mix(seed) ^ static_cast<uint64_t>(epoch)));
}

std::vector<size_t> split_permutation(size_t n, uint64_t seed) {
  return permutation(n, mix(mix(seed) ^ 0x5EED5A11D5A11Dull));
}

std::vector<size_t> shard_indices(const std::vector<size_t>& order, int rank, int world) {
  FABKIT_ENFORCE(world >= 1 && rank >= 0 && rank < world, "rank must be in [0, world)");
  size_t per_rank = order.size() / static_cast<size_t>(world);
  if (per_rank == 0)
    throw UsageError("the dataset has " + std::to_string(order.size()) + " examples but there are " +
                     std::to_string(world) + " ranks: every rank needs at least one; add data, "
                     "lower --max-length, or use fewer ranks");
  std::vector<size_t> out;
  out.reserve(per_rank);
  for (size_t i = 0; i < per_rank; ++i) out.push_back(order[i * world + rank]);
  return out;
}

std::vector<std::vector<size_t>> epoch_batches(size_t n, uint64_t seed, int64_t epoch, int rank,
                                               int world, size_t batch_size) {
  FABKIT_ENFORCE(batch_size >= 1, "batch_size must be >= 1");
  auto mine = shard_indices(epoch_order(n, seed, epoch), rank, world);
  std::vector<std::vector<size_t>> out;
  for (size_t at = 0; at < mine.size(); at += batch_size)
    out.emplace_back(mine.begin() + at, mine.begin() + std::min(mine.size(), at + batch_size));
  return out;
}

}  // namespace fabkit::trainer
