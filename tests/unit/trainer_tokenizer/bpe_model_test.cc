#include "trainer/tokenizer/bpe_model.h"

#include <gtest/gtest.h>

namespace fabkit::trainer {
namespace {

BpeModel model_with(std::initializer_list<const char*> tokens) {
  BpeModel m;
  int32_t id = 0;
  for (const char* t : tokens) m.vocab.emplace(t, id++);
  return m;
}

std::vector<int64_t> run(const BpeModel& m, const std::string& word) {
  std::vector<int64_t> out;
  std::string missing;
  EXPECT_TRUE(m.tokenize(word, out, &missing)) << missing;
  return out;
}

TEST(BpeModel, LowestRankMergesFirst) {
  // a=0 b=1 c=2 ab=3 bc=4
  BpeModel m = model_with({"a", "b", "c", "ab", "bc"});
  ASSERT_TRUE(m.add_merge("b", "c"));
  ASSERT_TRUE(m.add_merge("a", "b"));
  EXPECT_EQ(run(m, "abc"), (std::vector<int64_t>{0, 4}));
  BpeModel n = model_with({"a", "b", "c", "ab", "bc"});
  n.add_merge("a", "b");
  n.add_merge("b", "c");
  EXPECT_EQ(run(n, "abc"), (std::vector<int64_t>{3, 2}));
}

TEST(BpeModel, EqualRanksMergeLeftmostFirstAndStaleEntriesAreSkipped) {
  BpeModel m = model_with({"a", "aa", "aaaa"});
  m.add_merge("a", "a");
  EXPECT_EQ(run(m, "aaa"), (std::vector<int64_t>{1, 0}));
  m.add_merge("aa", "aa");
  EXPECT_EQ(run(m, "aaaaa"), (std::vector<int64_t>{2, 0}));
}

TEST(BpeModel, IgnoreMergesTakesAWholeVocabularyWord) {
  BpeModel m = model_with({"x", "y", "z", "xy", "xyz"});  // no merge builds xyz
  m.add_merge("x", "y");
  EXPECT_EQ(run(m, "xyz"), (std::vector<int64_t>{3, 2}));
  m.ignore_merges = true;
  EXPECT_EQ(run(m, "xyz"), (std::vector<int64_t>{4}));
  EXPECT_EQ(run(m, "xyx"), (std::vector<int64_t>{3, 0}));
}

TEST(BpeModel, UnknownCharacters) {
  BpeModel m = model_with({"<unk>", "a"});
  std::vector<int64_t> out;
  std::string missing;
  EXPECT_FALSE(m.tokenize("a?", out, &missing));
  EXPECT_EQ(missing, "?");
  EXPECT_TRUE(out.empty());
  m.unk_id = 0;
  EXPECT_EQ(run(m, "a??a"), (std::vector<int64_t>{1, 0, 0, 1}));
  m.fuse_unk = true;
  EXPECT_EQ(run(m, "a??a?"), (std::vector<int64_t>{1, 0, 1, 0}));
  EXPECT_FALSE(m.add_merge("a", "b"));  // b is not in the vocabulary
  EXPECT_FALSE(m.add_merge("a", "a"));  // nor is aa
}

}  // namespace
}  // namespace fabkit::trainer
