// A tokenizer.json written by hand (ids worked out by hand), and every rejected feature.
#include "trainer/tokenizer/hf_tokenizer.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "tests/support/ttar.h"
#include "trainer/tokenizer/byte_level.h"

namespace fabkit::trainer {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// <|eos|>=0, the 256 byte characters = 1 + byte, then he=257 ll=258 hell=259 hello=260 Ġw=261.
json base_doc() {
  json vocab = json::object();
  vocab["<|eos|>"] = 0;
  for (int b = 0; b < 256; ++b) vocab[byte_level_char(static_cast<uint8_t>(b))] = 1 + b;
  int id = 257;
  for (const char* t : {"he", "ll", "hell", "hello", "\u0120w"}) vocab[t] = id++;
  return json{
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", json::array({json{{"id", 0}, {"content", "<|eos|>"}, {"single_word", false},
                                         {"lstrip", false}, {"rstrip", false}, {"normalized", false},
                                         {"special", true}}})},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", vocab},
        {"merges", json::array({json::array({"h", "e"}), "l l", json::array({"he", "ll"}),
                                json::array({"hell", "o"}), json::array({"\u0120", "w"})})}}}};
}

HfTokenizer make(const json& doc, SpecialTokenHints hints = {}) {
  if (!hints.eos_id) hints.eos_id = 0;
  return HfTokenizer(parse_tokenizer_json(doc, "tok.json"), "tok.json", hints);
}

int64_t b(char c) { return 1 + static_cast<unsigned char>(c); }

TEST(HfTokenizer, HandWrittenByteLevelBpe) {
  HfTokenizer t = make(base_doc());
  EXPECT_EQ(t.kind(), "tokenizer.json");
  EXPECT_EQ(t.vocab_size(), 262);
  // "hello" merges fully; " world" is Ġw + bytes; the special token is one id, found in the text.
  EXPECT_EQ(t.encode("hello world<|eos|>"), (std::vector<int64_t>{260, 261, b('o'), b('r'), b('l'), b('d'), 0}));
  EXPECT_EQ(t.encode("hell"), (std::vector<int64_t>{259}));
  EXPECT_EQ(t.encode(""), std::vector<int64_t>{});
  EXPECT_EQ(t.decode({260, 261, b('o'), 0}), "hello wo<|eos|>");
  EXPECT_EQ(t.decode({1 + 0xF0, 1 + 0x9F}), "\uFFFD");  // half an emoji
  EXPECT_FALSE(t.bos_id());
  EXPECT_EQ(t.eos_id(), 0);
  EXPECT_EQ(t.special_token_id("<|eos|>"), 0);
  EXPECT_FALSE(t.special_token_id("hello"));  // a vocabulary word, not an added token
  EXPECT_THROW(t.decode({262}), UsageError);
  try {
    t.encode("ok \xFF");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "tok.json: cannot encode text that is not UTF-8 (byte 0xff at offset 3)");
  }
}

TEST(HfTokenizer, TemplateGivesBosAndEos) {
  json doc = base_doc();
  doc["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", json::array({json{{"SpecialToken", {{"id", "<|eos|>"}, {"type_id", 0}}}},
                              json{{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                              json{{"SpecialToken", {{"id", "<|eos|>"}, {"type_id", 0}}}}})},
      {"pair", json::array()},
      {"special_tokens", {{"<|eos|>", {{"id", "<|eos|>"}, {"ids", json::array({0})}, {"tokens", json::array({"<|eos|>"})}}}}}};
  HfTokenizer t = HfTokenizer(parse_tokenizer_json(doc, "tok.json"), "tok.json", {});
  EXPECT_EQ(t.bos_id(), 0);
  EXPECT_EQ(t.eos_id(), 0);  // the template's token after $A, no hints given
  EXPECT_EQ(t.encode_with_template("hell"), (std::vector<int64_t>{0, 259, 0}));
}

void expect_rejected(const json& doc, const std::string& what) {
  try {
    make(doc);
    ADD_FAILURE() << "accepted; expected: " << what;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("tok.json: ", 0), 0u) << e.what();
  }
}

TEST(HfTokenizer, UnsupportedFeaturesAreRejectedNamingTheField) {
  json d;
  d = base_doc(), d["model"]["type"] = "Unigram";
  expect_rejected(d, "field model.type: \"Unigram\" is not supported");
  d = base_doc(), d.erase("model");
  expect_rejected(d, "tok.json: field model: missing");
  d = base_doc(), d["model"]["type"] = "WordPiece";
  expect_rejected(d, "field model.type: \"WordPiece\" is not supported");
  d = base_doc(), d["model"].erase("type");
  expect_rejected(d, "field model.type: missing");
  d = base_doc(), d["model"]["byte_fallback"] = true;
  expect_rejected(d, "field model.byte_fallback: true");
  d = base_doc(), d["model"]["dropout"] = 0.1;
  expect_rejected(d, "field model.dropout");
  d = base_doc(), d["model"]["continuing_subword_prefix"] = "##";
  expect_rejected(d, "field model.continuing_subword_prefix");
  d = base_doc(), d["normalizer"] = {{"type", "NFC"}};
  expect_rejected(d, "field normalizer: type \"NFC\" is not supported");
  d = base_doc(), d["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\u2581"}};
  expect_rejected(d, "field pre_tokenizer.type: \"Metaspace\" is not supported");
  d = base_doc(), d["pre_tokenizer"] = nullptr;
  expect_rejected(d, "field pre_tokenizer: null");
  d = base_doc(), d["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", json::array({base_doc()["pre_tokenizer"],
      json{{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Isolated"}, {"invert", false}}})}};
  expect_rejected(d, "a pre-tokenizer after ByteLevel is not supported");
  d = base_doc(), d["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(x"}}}, {"behavior", "Isolated"}};
  expect_rejected(d, "field pre_tokenizer.pattern: the pattern does not compile");
  d = base_doc(), d["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "x"}}}, {"behavior", "Split"}};
  expect_rejected(d, "field pre_tokenizer.behavior: \"Split\" is not one of");
  d = base_doc(), d["decoder"] = {{"type", "WordPiece"}};
  expect_rejected(d, "field decoder.type: \"WordPiece\" is not supported");
  d = base_doc(), d["decoder"] = nullptr;
  expect_rejected(d, "field decoder: null");
  d = base_doc(), d["post_processor"] = {{"type", "RobertaProcessing"}};
  expect_rejected(d, "field post_processor.type: \"RobertaProcessing\" is not supported");
  d = base_doc(), d["added_tokens"][0]["single_word"] = true;
  expect_rejected(d, "field added_tokens[0].single_word: true is not supported");
  d = base_doc(), d["truncation"] = {{"max_length", 512}};
  expect_rejected(d, "field truncation:");
  d = base_doc(), d["model"]["merges"].push_back(json::array({"q", "zz"}));
  expect_rejected(d, "field model.merges[5]: \"q\", \"zz\" or their concatenation is not in model.vocab");
  d = base_doc(), d["model"]["merges"].push_back("a b c");
  expect_rejected(d, "field model.merges[5]: expected \"left right\"");
  d = base_doc(), d["model"]["vocab"]["bad"] = -3;
  expect_rejected(d, "field model.vocab[\"bad\"]: expected a token id");
  d = base_doc(), d["model"]["unk_token"] = "<unk>";
  expect_rejected(d, "field model.unk_token: \"<unk>\" is not in model.vocab");
}

TEST(HfTokenizer, CharacterOutsideTheVocabularyIsAnErrorNotADrop) {
  json d = base_doc();
  d["model"]["vocab"].erase(byte_level_char('q'));
  HfTokenizer t = make(d);
  try {
    t.encode("aqa");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("the character \"q\" is not in model.vocab"), std::string::npos) << e.what();
  }
}

TEST(HfTokenizer, SparseIdsCostNoTable) {
  json d = base_doc();
  d["added_tokens"].push_back({{"id", 2147483000}, {"content", "<|far|>"}, {"special", true}, {"normalized", false}});
  HfTokenizer t = make(d);
  EXPECT_EQ(t.vocab_size(), 2147483001);
  EXPECT_EQ(t.encode("hell<|far|>"), (std::vector<int64_t>{259, 2147483000}));
  EXPECT_EQ(t.decode({2147483000}), "<|far|>");
  EXPECT_THROW(t.decode({2147482999}), UsageError);
}

TEST(HfTokenizer, LoadErrorsNameTheFile) {
  testing::TempDir dir("hfjson");
  testing::write_file(dir.path() / "tokenizer.json", "{not json");
  try {
    load_hf_tokenizer(dir.path() / "tokenizer.json");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.json: not valid JSON"), std::string::npos) << e.what();
  }
  testing::write_file(dir.path() / "tokenizer.json", base_doc().dump());
  try {
    load_hf_tokenizer(dir.path() / "tokenizer.json");  // no hints and no template: no EOS
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("no EOS token"), std::string::npos) << e.what();
  }
  EXPECT_EQ(load_hf_tokenizer(dir.path() / "tokenizer.json", {std::nullopt, std::nullopt, "<|eos|>", std::nullopt})->eos_id(), 0);
  EXPECT_THROW(load_hf_tokenizer(dir.path() / "tokenizer.json", {std::nullopt, std::nullopt, "</s>", std::nullopt}),
               UsageError);
  EXPECT_THROW(load_hf_tokenizer(dir.path() / "tokenizer.json", {999, std::nullopt, {}, {}}), UsageError);
}

}  // namespace
}  // namespace fabkit::trainer
