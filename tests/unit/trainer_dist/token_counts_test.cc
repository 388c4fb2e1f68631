// The step's token counts computed by every rank on its own (trainer/data/token_counts.h) against
// what the loop summed before: each replica counting its own micro-batch (target_tokens,
// mask_tokens on the batch make_batch stacks) and an all-reduce over real Gloo ranks.
#include <gtest/gtest.h>

#include <cstdint>
#include <mutex>
#include <vector>

#include "common/errors.h"
#include "tests/unit/trainer_dist/gloo_rank_threads.h"
#include "trainer/app/step_engine.h"
#include "trainer/data/batch.h"
#include "trainer/data/sampler.h"
#include "trainer/data/token_counts.h"
#include "trainer/model/ignore_label.h"

namespace fabkit::trainer {
namespace {

// 23 examples of 6 tokens: packed blocks, right padding (mask 0, label -100), left padding, and
// prompts whose labels are -100 (chat): every count differs from its neighbours'.
std::vector<Example> mixed_examples() {
  std::vector<Example> out;
  for (int64_t i = 0; i < 23; ++i) {
    Example e;
    for (int64_t t = 0; t < 6; ++t) {
      const bool pad = (i % 4 == 1 && t >= 6 - i % 5) || (i % 4 == 2 && t < i % 3);
      const bool prompt = i % 4 == 3 && t < 1 + i % 4;
      e.input_ids.push_back(pad ? 0 : 10 + t);
      e.labels.push_back(pad || prompt ? kIgnoreLabel : 10 + t);
      e.attention_mask.push_back(pad ? 0 : 1);
    }
    out.push_back(e);
  }
  return out;
}

// What the loop did before: each replica counts its micro-batch of every index, then the counts
// are summed over the replicas by an all-reduce (real Gloo ranks).
std::vector<TokenCounts> allreduced_counts(const std::vector<Example>& data, uint64_t seed,
                                           int64_t epoch, int replicas, size_t batch_size) {
  std::vector<TokenCounts> out;
  std::mutex m;
  run_ranks(replicas, [&](Comm& c) {
    std::vector<TokenCounts> mine;
    for (const auto& idx :
         epoch_batches(data.size(), seed, epoch, c.rank(), replicas, batch_size)) {
      const Batch b = make_batch(data, idx);
      double counts[2] = {static_cast<double>(target_tokens(b.labels)),
                          static_cast<double>(mask_tokens(b.attention_mask))};
      c.allreduce_sum(counts, 2);
      mine.push_back({static_cast<int64_t>(counts[0]), static_cast<int64_t>(counts[1])});
    }
    const std::lock_guard<std::mutex> lock(m);
    if (c.rank() == 0) out = mine;
  });
  return out;
}

TEST(TokenCounts, EqualTheReplicasAllReduceFor1To3ReplicasPaddingIgnoredLabelsAndPartialBatches) {
  const std::vector<Example> data = mixed_examples();
  const std::vector<TokenCounts> per_example = example_token_counts(data);
  int64_t padded = 0, ignored = 0;
  for (const Example& e : data) {
    for (size_t t = 0; t < e.labels.size(); ++t) {
      padded += e.attention_mask[t] == 0;
      ignored += e.labels[t] == kIgnoreLabel;
    }
  }
  ASSERT_GT(padded, 0);
  ASSERT_GT(ignored, padded);  // prompts too, not only padding
  for (int replicas : {1, 2, 3}) {
    // Batch 4: 23 / 23 / 7 examples per replica end the epoch with a partial micro-batch (and 2
    // examples dropped at 3 replicas, 1 at 2).
    for (size_t batch_size : {size_t{1}, size_t{4}}) {
      for (int64_t epoch : {0, 1}) {
        const auto expected = allreduced_counts(data, 7, epoch, replicas, batch_size);
        const auto got = epoch_batch_token_counts(per_example, 7, epoch, replicas, batch_size);
        ASSERT_EQ(got.size(), expected.size()) << replicas << " replicas, batch " << batch_size;
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_EQ(got[i].target, expected[i].target)
              << replicas << " replicas, batch " << batch_size << ", epoch " << epoch << ", index "
              << i;
          EXPECT_EQ(got[i].real, expected[i].real) << replicas << " replicas, batch " << batch_size
                                                   << ", epoch " << epoch << ", index " << i;
        }
      }
    }
  }
}

// An example's counts: the shifted labels that count, the mask's sum.
TEST(TokenCounts, PerExampleCountsShiftTheLabelsAndSumTheMask) {
  Example e{{5, 6, 7, 0}, {5, 6, 7, kIgnoreLabel}, {1, 1, 1, 0}};
  EXPECT_EQ(example_token_counts({e})[0], (TokenCounts{2, 3}));  // labels[1:] = 6, 7, -100
  e.labels[0] = kIgnoreLabel;  // the first label never counts (nothing predicts it)
  e.labels[1] = kIgnoreLabel;
  EXPECT_EQ(example_token_counts({e})[0], (TokenCounts{1, 3}));
}

TEST(TokenCounts, FewerExamplesThanReplicasIsTheSamplersError) {
  const std::vector<TokenCounts> two(2);
  EXPECT_THROW(epoch_batch_token_counts(two, 1, 0, 3, 1), UsageError);
}

TEST(TokenCounts, FingerprintTellsDifferentDataApart) {
  const std::vector<Example> data = mixed_examples();
  std::vector<Example> other = data;
  other[5].labels[3] = kIgnoreLabel;
  const auto fp = token_counts_fingerprint(example_token_counts(data));
  EXPECT_EQ(fp, token_counts_fingerprint(example_token_counts(data)));
  EXPECT_NE(fp, token_counts_fingerprint(example_token_counts(other)));
  EXPECT_NE(fp, token_counts_fingerprint(
                    example_token_counts(std::vector<Example>(data.begin(), data.end() - 1))));
}

}  // namespace
}  // namespace fabkit::trainer
