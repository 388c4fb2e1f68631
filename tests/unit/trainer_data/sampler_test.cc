#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "common/errors.h"
#include "trainer/data/batch.h"
#include "trainer/data/sampler.h"

namespace fabkit::trainer {
namespace {

TEST(Sampler, EpochOrderIsAPermutationDeterministicAndEpochDependent) {
  auto a = epoch_order(100, 42, 0);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<size_t> iota(100);
  std::iota(iota.begin(), iota.end(), size_t{0});
  EXPECT_EQ(sorted, iota);
  EXPECT_NE(a, iota);
  EXPECT_EQ(a, epoch_order(100, 42, 0));
  EXPECT_NE(a, epoch_order(100, 42, 1));
  EXPECT_NE(a, epoch_order(100, 43, 0));
  // Pinned: the order must not change between builds or standard libraries (mt19937_64 is
  // specified by the standard; the shuffle is ours). A change here breaks resumed runs.
  EXPECT_EQ(epoch_order(8, 0, 0), (std::vector<size_t>{7, 4, 0, 1, 5, 2, 3, 6}));
  EXPECT_EQ(epoch_order(8, 0, 1), (std::vector<size_t>{5, 2, 1, 4, 3, 6, 0, 7}));
  EXPECT_EQ(split_permutation(8, 0), (std::vector<size_t>{3, 6, 2, 5, 7, 1, 4, 0}));
}

TEST(Sampler, ShardsAreDisjointEqualAndInterleaveTheGlobalOrder) {
  auto order = epoch_order(10, 7, 2);
  std::set<size_t> seen;
  for (int r = 0; r < 3; ++r) {
    auto s = shard_indices(order, r, 3);
    ASSERT_EQ(s.size(), 3u);  // 10 / 3, the last one of the order dropped
    for (size_t i = 0; i < s.size(); ++i) {
      EXPECT_EQ(s[i], order[i * 3 + r]);
      EXPECT_TRUE(seen.insert(s[i]).second);
    }
  }
  EXPECT_EQ(seen.count(order[9]), 0u);
  EXPECT_THROW(shard_indices(epoch_order(2, 0, 0), 0, 3), UsageError);
}

TEST(Sampler, RankBatchesTogetherAreTheSingleProcessGlobalBatch) {
  // world 2 x batch 3 per rank covers, step by step, the same examples as world 1 x batch 6.
  auto one = epoch_batches(24, 5, 1, 0, 1, 6);
  auto r0 = epoch_batches(24, 5, 1, 0, 2, 3), r1 = epoch_batches(24, 5, 1, 1, 2, 3);
  ASSERT_EQ(one.size(), r0.size());
  for (size_t s = 0; s < one.size(); ++s) {
    std::set<size_t> global(one[s].begin(), one[s].end()), both(r0[s].begin(), r0[s].end());
    both.insert(r1[s].begin(), r1[s].end());
    EXPECT_EQ(global, both) << "step " << s;
  }
}

TEST(Batch, StacksExamples) {
  std::vector<Example> ex = {{{1, 2, 3}, {1, 2, -100}, {1, 1, 0}}, {{4, 5, 6}, {4, 5, 6}, {1, 1, 1}}};
  Batch b = make_batch(ex, {1, 0});
  EXPECT_EQ(b.input_ids.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(b.input_ids[0][2].item<int64_t>(), 6);
  EXPECT_EQ(b.labels[1][2].item<int64_t>(), -100);
  EXPECT_EQ(b.attention_mask[1][2].item<int64_t>(), 0);
}

}  // namespace
}  // namespace fabkit::trainer
