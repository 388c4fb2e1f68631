// Which examples a rank sees, and in which order. Pure index arithmetic: every rank computes the
// same global order from (seed, epoch) and takes its own slice, so no data crosses the network
// and a restarted job replays the same order. std::shuffle is not used because its algorithm is
// implementation-defined; mt19937_64's output is fixed by the standard, so the order is the same
// with any standard library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fabkit::trainer {

// A permutation of 0..n-1 for this epoch; different epochs give different orders.
std::vector<size_t> epoch_order(size_t n, uint64_t seed, int64_t epoch);

// The permutation that chooses validation records (independent of every epoch's order).
std::vector<size_t> split_permutation(size_t n, uint64_t seed);

// Rank r takes order[r], order[r + world], ...; every rank gets floor(n / world) examples, the
// last n % world of the order are dropped this epoch (a different set each epoch). UsageError
// when n < world (some rank would have nothing).
std::vector<size_t> shard_indices(const std::vector<size_t>& order, int rank, int world);

// The shard cut into batches of batch_size; the last one may be smaller (same size on every rank,
// since all shards have equal length).
std::vector<std::vector<size_t>> epoch_batches(size_t n, uint64_t seed, int64_t epoch, int rank,
                                               int world, size_t batch_size);

}  // namespace fabkit::trainer
