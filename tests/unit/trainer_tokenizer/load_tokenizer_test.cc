// load_tokenizer's choice between tokenizer.model, tokenizer.json and the byte tokenizer.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "tests/support/ttar.h"
#include "trainer/tokenizer/byte_level.h"
#include "trainer/tokenizer/tokenizer.h"

namespace fabkit::trainer {
namespace {
using nlohmann::json;

// The smallest accepted tokenizer.json: the byte alphabet (ids 0..255) and two special tokens.
std::string tiny_tokenizer_json() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level_char(static_cast<uint8_t>(b))] = b;
  json added = json::array();
  for (auto [id, text] : {std::pair<int, const char*>{256, "<|end|>"}, {257, "<|pad|>"}})
    added.push_back({{"id", id}, {"content", text}, {"special", true}, {"normalized", false}});
  return json{{"added_tokens", added},
              {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
              {"decoder", {{"type", "ByteLevel"}}},
              {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}}}
      .dump();
}

TEST(LoadTokenizer, TokenizerJsonBesideConfigJson) {
  testing::TempDir dir("loadtok");
  testing::write_file(dir.path() / "tokenizer.json", tiny_tokenizer_json());
  testing::write_file(dir.path() / "config.json", R"({"vocab_size": 300, "eos_token_id": [257, 256]})");
  auto tok = load_tokenizer(dir.path());
  EXPECT_EQ(tok->kind(), "tokenizer.json");
  EXPECT_EQ(tok->vocab_size(), 258);
  EXPECT_EQ(tok->eos_id(), 257);  // config.json's first eos_token_id
  EXPECT_EQ(tok->encode("hi<|end|>"), (std::vector<int64_t>{'h', 'i', 256}));

  // Without an id in config.json, tokenizer_config.json's tokens (string or AddedToken object).
  testing::write_file(dir.path() / "config.json", R"({"vocab_size": 300})");
  testing::write_file(dir.path() / "tokenizer_config.json",
                      R"({"eos_token": {"content": "<|end|>", "special": true}, "pad_token": "<|pad|>"})");
  tok = load_tokenizer(dir.path());
  EXPECT_EQ(tok->eos_id(), 256);
  EXPECT_EQ(tok->pad_id(), 257);

  testing::write_file(dir.path() / "config.json", R"({"vocab_size": 200})");
  try {
    load_tokenizer(dir.path());
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("the tokenizer.json tokenizer has 258 tokens but config.json vocab_size is 200"),
              std::string::npos)
        << e.what();
  }
}

TEST(LoadTokenizer, TokenizerModelWinsAndUnsupportedJsonIsAnError) {
  testing::TempDir dir("loadtok");
  EXPECT_EQ(load_tokenizer(dir.path())->kind(), "byte");
  testing::write_file(dir.path() / "tokenizer.json", R"({"model": {"type": "Unigram", "vocab": []}})");
  try {
    load_tokenizer(dir.path());
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.json: field model.type: \"Unigram\" is not supported"),
              std::string::npos)
        << e.what();
  }
  // Llama-2 and Mistral ship both files: the SentencePiece model is the one read.
  testing::write_file(dir.path() / "tokenizer.model", "not a model");
  try {
    load_tokenizer(dir.path());
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.model: not a SentencePiece model"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fabkit::trainer
