#include <gtest/gtest.h>

#include <sstream>

#include "common/errors.h"
#include "tests/support/ttar.h"
#include "trainer/tokenizer/tokenizer.h"

namespace fabkit::trainer {
namespace {
namespace fs = std::filesystem;

TEST(ByteTokenizer, RoundTripAndSpecials) {
  ByteTokenizer t;
  auto ids = t.encode("héllo\n");
  EXPECT_EQ(ids.size(), 7u);  // é is two UTF-8 bytes
  EXPECT_EQ(ids[0], 'h');
  EXPECT_EQ(t.decode(ids), "héllo\n");
  EXPECT_EQ(t.special_token_id("<|im_start|>"), 259);
  EXPECT_EQ(t.special_token_id("<|im_end|>"), 260);
  EXPECT_FALSE(t.special_token_id("<|nope|>"));
  EXPECT_EQ(t.decode({256, 'a', 257}), "<s>a</s>");
  EXPECT_THROW(t.decode({261}), UsageError);
  // Special-token text in user data stays bytes (cannot inject control tokens).
  EXPECT_EQ(t.encode("<|im_end|>").size(), 10u);
}

// Trains a tiny SentencePiece model with libsentencepiece's own trainer on text the test writes
// (nothing downloaded). ChatML markers as user-defined symbols, as chat-tuned models ship them.
fs::path make_test_model(const fs::path& dir) {
  std::ostringstream text;
  const char* lines[] = {"the quick brown fox jumps over the lazy dog",
                         "a fabric of infiniband links carries the gradients",
                         "every rank reads its own shard of the data",
                         "packing joins examples with an end of sequence token"};
  for (int i = 0; i < 40; ++i) text << lines[i % 4] << " " << i << "\n";
  testing::write_file(dir / "corpus.txt", text.str());
  std::string args = "--input=" + (dir / "corpus.txt").string() + " --model_prefix=" +
                     (dir / "tokenizer").string() +
                     " --vocab_size=120 --model_type=bpe --character_coverage=1.0"
                     " --user_defined_symbols=<|im_start|>,<|im_end|> --minloglevel=2";
  train_sentencepiece(args);
  return dir / "tokenizer.model";
}

TEST(SentencePieceTokenizer, TrainedModelEncodesDecodesAndFindsSpecials) {
  testing::TempDir dir("sp");
  make_test_model(dir.path());
  auto tok = load_tokenizer(dir.path());
  EXPECT_EQ(tok->kind(), "sentencepiece");
  EXPECT_EQ(tok->vocab_size(), 120);
  EXPECT_EQ(tok->bos_id(), 1);  // SentencePiece's defaults: unk 0, <s> 1, </s> 2
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_FALSE(tok->pad_id());
  auto ids = tok->encode("the lazy fox");
  EXPECT_GE(ids.size(), 2u);
  EXPECT_EQ(tok->decode(ids), "the lazy fox");
  auto im = tok->special_token_id("<|im_start|>");
  ASSERT_TRUE(im);
  EXPECT_EQ(tok->decode({*im}), "<|im_start|>");
  EXPECT_FALSE(tok->special_token_id("<|unknown|>"));
}

TEST(LoadTokenizer, ChoosesByFilesAndChecksVocab) {
  testing::TempDir dir("tok");
  EXPECT_EQ(load_tokenizer(dir.path())->kind(), "byte");
  testing::write_file(dir.path() / "config.json", R"({"vocab_size": 100})");
  try {
    load_tokenizer(dir.path());
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("261 tokens but config.json vocab_size is 100"), std::string::npos)
        << e.what();
  }
  testing::write_file(dir.path() / "tokenizer.json", "{}");
  EXPECT_THROW(load_tokenizer(dir.path()), UsageError);
  testing::write_file(dir.path() / "tokenizer.model", "not a model");
  try {
    load_tokenizer(dir.path());
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.model: not a SentencePiece model"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fabkit::trainer
