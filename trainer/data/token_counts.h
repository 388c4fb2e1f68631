// The token counts of a step's global batch (all replicas, all micro-batches), computed by every
// rank on its own instead of summed over the replicas by a collective in every step.
//
// Why a rank can: every rank loads the whole dataset (dataset.h) and computes the same global
// order from (seed, epoch) (sampler.h), so it knows which examples every other replica reads;
// the counts are integers, so the local sum equals the all-reduce of the replicas' counts
// exactly. A rank whose data differ from its peers' would count a different batch: the loop
// compares a fingerprint of the counts across ranks once at the start (one collective per run).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "trainer/data/dataset.h"

namespace fabkit::trainer {

struct TokenCounts {
  // Labels the causal loss counts: labels[1:] != -100 (the logits at t predict t+1).
  int64_t target = 0;
  int64_t real = 0;  // the attention mask's sum: tokens that are not padding
  TokenCounts& operator+=(const TokenCounts& o) {
    target += o.target;
    real += o.real;
    return *this;
  }
  bool operator==(const TokenCounts& o) const { return target == o.target && real == o.real; }
};

// Per example, once per run (one pass over the tokens).
std::vector<TokenCounts> example_token_counts(const std::vector<Example>& examples);

// Per micro-batch index of `epoch`: the counts summed over every replica's micro-batch of that
// index, as epoch_batches(n, seed, epoch, r, replicas, batch_size)[i] for r in [0, replicas).
// Replica r's i-th batch takes order[j * replicas + r] for j in [i * batch_size, end_i), so the
// union over the replicas is the contiguous run order[i * batch_size * replicas, end_i * replicas):
// one pass over the epoch's order, whatever the number of replicas. Same UsageError as
// shard_indices when there are fewer examples than replicas.
std::vector<TokenCounts> epoch_batch_token_counts(const std::vector<TokenCounts>& per_example,
                                                  uint64_t seed, int64_t epoch, int replicas,
                                                  size_t batch_size);

// A fingerprint of the per-example counts (FNV-1a over their values and number), equal on ranks
// that loaded the same examples.
uint64_t token_counts_fingerprint(const std::vector<TokenCounts>& per_example);

}  // namespace fabkit::trainer
