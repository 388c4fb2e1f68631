#include <gtest/gtest.h>

#include <set>

#include "common/errors.h"
#include "tests/support/ttar.h"
#include "trainer/data/chat_template.h"
#include "trainer/data/dataset.h"
#include "trainer/data/jsonl_reader.h"
#include "trainer/model/ignore_label.h"

namespace fabkit::trainer {
namespace {
namespace fs = std::filesystem;

class DatasetTest : public ::testing::Test {
 protected:
  testing::TempDir dir{"dataset"};
  ByteTokenizer tok;
  fs::path write(const std::string& name, const std::string& text) {
    testing::write_file(dir.path() / name, text);
    return dir.path() / name;
  }
  std::string error_of(const fs::path& p, const DataOptions& o) {
    try {
      load_dataset(p, tok, o);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(DatasetTest, TextColumnPaddedExamples) {
  auto p = write("t.jsonl", "{\"body\": \"ab\"}\n{\"body\": \"cdefgh\"}\n");
  DataOptions o;
  o.text_column = "body";
  o.packing = false;
  o.max_length = 6;
  LoadedData d = load_dataset(p, tok, o);
  EXPECT_EQ(d.train_stats.format, DataFormat::kText);
  ASSERT_EQ(d.train.size(), 2u);
  const Example& a = d.train[0];
  std::vector<int64_t> ids{ByteTokenizer::kBos, 'a', 'b', ByteTokenizer::kEos, ByteTokenizer::kPad,
                           ByteTokenizer::kPad};
  EXPECT_EQ(a.input_ids, ids);
  EXPECT_EQ(a.labels, (std::vector<int64_t>{256, 'a', 'b', 257, kIgnoreLabel, kIgnoreLabel}));
  EXPECT_EQ(a.attention_mask, (std::vector<int64_t>{1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(d.train[1].input_ids, (std::vector<int64_t>{256, 'c', 'd', 'e', 'f', 'g'}));  // truncated
  EXPECT_EQ(d.train_stats.truncated, 1u);
  EXPECT_EQ(d.train_stats.tokens, 4 + 6);
}

TEST_F(DatasetTest, PackingConcatenatesWithEosAndPadsTheLastBlock) {
  auto p = write("t.jsonl", "{\"text\": \"abc\"}\n{\"text\": \"de\"}\n");
  DataOptions o;
  o.max_length = 4;
  LoadedData d = load_dataset(p, tok, o);
  // stream: <s> a b c </s> <s> d e </s>  (9 tokens) -> blocks of 4: 4, 4, 1 + padding
  ASSERT_EQ(d.train.size(), 3u);
  EXPECT_EQ(d.train[0].input_ids, (std::vector<int64_t>{256, 'a', 'b', 'c'}));
  EXPECT_EQ(d.train[1].input_ids, (std::vector<int64_t>{257, 256, 'd', 'e'}));
  EXPECT_EQ(d.train[2].input_ids, (std::vector<int64_t>{257, 258, 258, 258}));
  EXPECT_EQ(d.train[2].labels, (std::vector<int64_t>{257, kIgnoreLabel, kIgnoreLabel, kIgnoreLabel}));
  EXPECT_EQ(d.train[2].attention_mask, (std::vector<int64_t>{1, 0, 0, 0}));
}

TEST_F(DatasetTest, PreTokenizedIdsUsedAsIsWithOptionalLabels) {
  auto p = write("t.jsonl",
                 "{\"input_ids\": [5, 6, 7]}\n{\"input_ids\": [8, 9, 257], \"labels\": [-100, 9, 257]}\n");
  DataOptions o;
  o.packing = false;
  o.max_length = 5;
  o.vocab_size = 300;
  LoadedData d = load_dataset(p, tok, o);
  EXPECT_EQ(d.train_stats.format, DataFormat::kInputIds);
  EXPECT_EQ(d.train[0].input_ids, (std::vector<int64_t>{5, 6, 7, 257, 258}));  // no BOS added
  EXPECT_EQ(d.train[1].input_ids, (std::vector<int64_t>{8, 9, 257, 258, 258}));  // already ends in EOS
  EXPECT_EQ(d.train[1].labels, (std::vector<int64_t>{kIgnoreLabel, 9, 257, kIgnoreLabel, kIgnoreLabel}));
  auto bad = write("b.jsonl", "{\"input_ids\": [5, 300]}\n");
  EXPECT_NE(error_of(bad, o).find("b.jsonl:1: \"input_ids\"[1] = 300 is not a token id"), std::string::npos)
      << error_of(bad, o);
  auto bad2 = write("b2.jsonl", "{\"input_ids\": [5, 6], \"labels\": [5]}\n");
  EXPECT_NE(error_of(bad2, o).find("\"labels\" has 1 entries"), std::string::npos);
}

TEST_F(DatasetTest, ChatMlRenderingAndAssistantOnlyLabels) {
  Json msgs = Json::parse(R"([{"role": "system", "content": "S"}, {"role": "user", "content": "hi"},
                              {"role": "assistant", "content": "yo"}])");
  Sequence s = render_chatml(msgs, tok, "x:1");
  std::string rendered = tok.decode(s.ids);
  EXPECT_EQ(rendered,
            "<s><|im_start|>system\nS<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nyo<|im_end|>\n");
  std::vector<int64_t> learnt;
  for (size_t i = 0; i < s.ids.size(); ++i)
    if (s.labels[i] != kIgnoreLabel) {
      EXPECT_EQ(s.labels[i], s.ids[i]);
      learnt.push_back(s.ids[i]);
    }
  EXPECT_EQ(learnt, (std::vector<int64_t>{'y', 'o', ByteTokenizer::kImEnd}));
  EXPECT_THROW(render_chatml(Json::parse("[]"), tok, "x:1"), UsageError);
  EXPECT_THROW(render_chatml(Json::parse(R"([{"role": "bot", "content": "a"}])"), tok, "x:1"), UsageError);
  EXPECT_THROW(render_chatml(Json::parse(R"([{"role": "user", "content": 3}])"), tok, "x:1"), UsageError);

  auto p = write("c.jsonl", "{\"messages\": " + msgs.dump() + "}\n");
  DataOptions o;
  o.packing = false;
  o.max_length = 128;
  LoadedData d = load_dataset(p, tok, o);
  EXPECT_EQ(d.train_stats.format, DataFormat::kChat);
  const Example& e = d.train[0];
  EXPECT_EQ(e.input_ids[s.ids.size()], ByteTokenizer::kEos);
  EXPECT_EQ(e.labels[s.ids.size()], kIgnoreLabel);  // after "\n", which is not learnt
}

TEST_F(DatasetTest, BadLinesNameFileAndLineOrAreSkippedAndCounted) {
  struct Case {
    std::string text;
    std::string expect;
  } cases[] = {
      {"{\"text\": \"a\"}\n\n{\"text\": \"b\"}\n", "t.jsonl:2: empty line"},
      {"{\"text\": \"a\"}\n{\"text\": \"b\"\n", "t.jsonl:2: not valid JSON"},
      {"{\"text\": \"a\"}\n[1, 2]\n", "t.jsonl:2: expected a JSON object"},
      {"{\"text\": \"a\"}\n{\"txt\": \"b\"}\n", "t.jsonl:2: missing column \"text\""},
      {"{\"text\": \"a\"}\n{\"text\": 5}\n", "t.jsonl:2: column \"text\" must be a string"},
      {"{\"body\": \"a\"}\n", "t.jsonl:1: the record has none of"},
      {"{\"messages\": []}\n", "t.jsonl:1: \"messages\" must be a non-empty array"},
  };
  for (const auto& c : cases) {
    auto p = write("t.jsonl", c.text);
    DataOptions o;
    o.max_length = 8;
    std::string m = error_of(p, o);
    EXPECT_NE(m.find(c.expect), std::string::npos) << m;
    EXPECT_NE(m.find("--skip-bad-lines"), std::string::npos) << m;
  }
  auto p = write("t.jsonl", "{\"text\": \"a\"}\n\nnope\n{\"x\": 1}\n{\"text\": \"b\"}\n");
  DataOptions o;
  o.skip_bad_lines = true;
  o.packing = false;
  o.max_length = 8;
  LoadedData d = load_dataset(p, tok, o);
  EXPECT_EQ(d.train.size(), 2u);
  EXPECT_EQ(d.train_stats.lines_skipped, 3u);
  ASSERT_EQ(d.train_stats.skip_reasons.size(), 3u);
  EXPECT_NE(d.train_stats.skip_reasons[2].find("t.jsonl:4"), std::string::npos);
}

TEST_F(DatasetTest, EmptyDatasetAndMissingFile) {
  DataOptions o;
  EXPECT_NE(error_of(write("e.jsonl", ""), o).find("the dataset is empty"), std::string::npos);
  o.skip_bad_lines = true;
  EXPECT_NE(error_of(write("e2.jsonl", "\n\n"), o).find("2 lines skipped"), std::string::npos);
  EXPECT_NE(error_of(dir.path() / "absent.jsonl", o).find("cannot open"), std::string::npos);
}

TEST_F(DatasetTest, ValidSplitIsDeterministicAndDisjoint) {
  std::string text;
  for (int i = 0; i < 20; ++i) text += "{\"text\": \"" + std::string(1, static_cast<char>('a' + i)) + "\"}\n";
  auto p = write("t.jsonl", text);
  DataOptions o;
  o.packing = false;
  o.max_length = 4;
  o.valid_split = 0.25;
  o.seed = 3;
  LoadedData a = load_dataset(p, tok, o), b = load_dataset(p, tok, o);
  ASSERT_EQ(a.valid.size(), 5u);
  ASSERT_EQ(a.train.size(), 15u);
  std::set<int64_t> train_letters, valid_letters;
  for (size_t i = 0; i < a.valid.size(); ++i) {
    EXPECT_EQ(a.valid[i].input_ids, b.valid[i].input_ids);
    valid_letters.insert(a.valid[i].input_ids[1]);
  }
  for (const auto& e : a.train) train_letters.insert(e.input_ids[1]);
  EXPECT_EQ(train_letters.size() + valid_letters.size(), 20u);
  for (int64_t v : valid_letters) EXPECT_EQ(train_letters.count(v), 0u);
  o.seed = 4;
  LoadedData c = load_dataset(p, tok, o);
  bool differs = false;
  for (size_t i = 0; i < c.valid.size(); ++i) differs |= c.valid[i].input_ids != a.valid[i].input_ids;
  EXPECT_TRUE(differs);
  o.valid_split = 0;
  o.valid_file = write("v.jsonl", "{\"text\": \"zz\"}\n");
  LoadedData f = load_dataset(p, tok, o);
  EXPECT_EQ(f.train.size(), 20u);
  ASSERT_EQ(f.valid.size(), 1u);
  EXPECT_EQ(f.valid[0].input_ids[1], 'z');
  o.valid_file.clear();
  o.valid_split = 0.99;
  EXPECT_NE(error_of(p, o).find("leaves nothing to train on"), std::string::npos);
}

}  // namespace
}  // namespace fabkit::trainer
