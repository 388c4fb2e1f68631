// fabkit's tokenizer.json encode/decode against the PyPI `tokenizers` package, token for token.
// hf_reference.py builds the tokenizers with the library (trained on a generated corpus; nothing is
// downloaded) and records the library's answers for a corpus of ASCII, accents, CJK, emoji, long
// digit runs, whitespace runs, newlines, contractions and special tokens inside text.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/support/ttar.h"
#include "trainer/tokenizer/hf_tokenizer.h"

namespace fabkit::trainer {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

std::string shell_quoted(const std::string& s) { return "'" + s + "'"; }  // paths we made: no quotes in them

std::vector<int64_t> ids_of(const json& a) { return a.get<std::vector<int64_t>>(); }

// Runs the reference once for all the tests below; empty json when the test must skip.
class HfParity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir("hf_parity");
    std::string py = FABKIT_PYTHON;
    if (std::system((shell_quoted(py) + " -c 'import tokenizers' >/dev/null 2>&1").c_str()) != 0) {
      skip_ = "FABKIT_PYTHON=" + py + " cannot import `tokenizers` (the reference): create it with "
              "python3 -m venv .venv && .venv/bin/pip install --no-deps -r scripts/python-requirements.txt, "
              "or configure with -DFABKIT_PYTHON=<a python that has it>";
      return;
    }
    std::string log = (dir_->path() / "reference.log").string();
    std::string cmd = shell_quoted(py) + " " + shell_quoted(FABKIT_HF_REFERENCE_SCRIPT) + " " + shell_quoted(dir_->path().string()) +
                      " >" + shell_quoted(log) + " 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      std::ifstream in(log);
      std::stringstream ss;
      ss << in.rdbuf();
      error_ = "the reference script failed: " + cmd + "\n" + ss.str();
      return;
    }
    std::ifstream in(dir_->path() / "expected.json");
    expected_ = new json(json::parse(in));
  }
  static void TearDownTestSuite() {
    delete expected_;
    delete dir_;
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_TRUE(error_.empty()) << error_;
    ASSERT_NE(expected_, nullptr);
  }
  const json& config(const std::string& name) { return expected_->at("configs").at(name); }
  std::unique_ptr<HfTokenizer> load(const std::string& name) {
    std::unique_ptr<Tokenizer> t = load_tokenizer(config(name).at("dir").get<std::string>());
    EXPECT_EQ(t->kind(), "tokenizer.json");
    return std::unique_ptr<HfTokenizer>(dynamic_cast<HfTokenizer*>(t.release()));
  }

  // Every text: ids, ids with the template, decode of all ids and of each id alone.
  void compare_all(const std::string& name) {
    auto tok = load(name);
    ASSERT_TRUE(tok);
    const json& texts = expected_->at("texts");
    const json& cases = config(name).at("cases");
    ASSERT_EQ(texts.size(), cases.size());
    ASSERT_GE(texts.size(), 150u);
    EXPECT_EQ(tok->vocab_size(), config(name).at("vocab_size").get<int64_t>());
    size_t tokens = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
      const std::string text = texts[i].get<std::string>();
      const json& c = cases[i];
      SCOPED_TRACE(name + " text #" + std::to_string(i) + ": " + json(text).dump());
      std::vector<int64_t> ids = tok->encode(text);
      ASSERT_EQ(ids, ids_of(c.at("ids")));
      EXPECT_EQ(tok->encode_with_template(text), ids_of(c.at("ids_with_template")));
      EXPECT_EQ(tok->decode(ids), c.at("decoded").get<std::string>());
      for (size_t k = 0; k < ids.size(); ++k)
        EXPECT_EQ(tok->decode({ids[k]}), c.at("per_token")[k].get<std::string>()) << "token " << k;
      tokens += ids.size();
    }
    RecordProperty("tokens_compared", static_cast<int>(tokens));
    RecordProperty("tokenizers_version", expected_->at("tokenizers_version").get<std::string>());
  }

  static testing::TempDir* dir_;
  static json* expected_;
  static std::string skip_, error_;
};
testing::TempDir* HfParity::dir_ = nullptr;
json* HfParity::expected_ = nullptr;
std::string HfParity::skip_, HfParity::error_;

// GPT-2: ByteLevel's own pattern, no BOS, an lstrip/rstrip special and a normalized added token.
TEST_F(HfParity, Gpt2StyleByteLevel) {
  compare_all("gpt2");
  auto tok = load("gpt2");
  EXPECT_FALSE(tok->bos_id());       // HF adds no BOS for GPT-2, so neither does fabtrain
  EXPECT_EQ(tok->eos_id(), 0);       // config.json eos_token_id
  EXPECT_EQ(tok->special_token_id("<mask>"), tok->encode("<mask>").at(0));
}

// Llama 3: Split with its pattern + ByteLevel(use_regex=false), ignore_merges, BOS template.
TEST_F(HfParity, Llama3StyleSplitAndIgnoreMerges) {
  compare_all("llama3");
  auto tok = load("llama3");
  EXPECT_EQ(tok->bos_id(), tok->special_token_id("<|begin_of_text|>"));
  EXPECT_EQ(tok->eos_id(), tok->special_token_id("<|end_of_text|>"));  // tokenizer_config.json
  EXPECT_EQ(tok->pad_id(), tok->special_token_id("<|eot_id|>"));
}

// The same vocabulary without ignore_merges: the reference differs from the Llama 3 one on some
// texts, so the comparison above really exercised ignore_merges.
TEST_F(HfParity, WithoutIgnoreMerges) {
  compare_all("llama3_no_ignore_merges");
  const json& a = config("llama3").at("cases");
  const json& b = config("llama3_no_ignore_merges").at("cases");
  size_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += a[i].at("ids") != b[i].at("ids");
  EXPECT_GT(differ, 0u);
}

// add_prefix_space, a <s> $A </s> template, and Split's Contiguous, MergedWithNext,
// MergedWithPrevious, Removed behaviours, a String pattern and invert.
TEST_F(HfParity, PrefixSpaceAndSplitBehaviours) {
  compare_all("prefix_splits");
  auto tok = load("prefix_splits");
  EXPECT_EQ(tok->bos_id(), 0);
  EXPECT_EQ(tok->eos_id(), 1);  // the template's token after $A (no config files)
}

}  // namespace
}  // namespace fabkit::trainer
