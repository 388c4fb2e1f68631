// fabkit's chat-template engine against Python's jinja2, byte for byte: every real model's
// template under testdata/chat_templates/ (SOURCES.md says where each came from) x every
// conversation of testdata/chat_template_cases.json x add_generation_prompt false/true.
// chat_template_reference.py renders them with HF's settings at test time; where jinja2 fails the
// engine must fail too (raise_exception with the same message, jinja2's own errors as runtime
// errors), never render something.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/support/ttar.h"
#include "trainer/serve/jinja/chat_template.h"

namespace fabkit::trainer::serve {
namespace {
namespace fs = std::filesystem;
using nlohmann::ordered_json;

std::string shell_quoted(const std::string& s) {
  return "'" + s + "'";
}  // paths we made: no quotes

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path testdata() { return FABKIT_CHAT_TEMPLATE_TESTDATA; }

ordered_json load_cases() {
  return ordered_json::parse(read_file(testdata() / "chat_template_cases.json"));
}

// Every fixture file, so a template added to the folder is tested (or the test says it is not).
std::vector<std::string> fixture_names() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(testdata() / "chat_templates"))
    if (e.path().extension() == ".jinja") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

class ChatTemplateParity : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir("chat_template_parity");
    std::string py = FABKIT_PYTHON;
    if (std::system((shell_quoted(py) + " -c 'import jinja2' >/dev/null 2>&1").c_str()) != 0) {
      skip_ = "FABKIT_PYTHON=" + py +
              " cannot import jinja2 (the reference): create .venv with "
              "scripts/setup (Jinja2 is in scripts/python-requirements.txt) or configure with "
              "-DFABKIT_PYTHON=<a python that has it>";
      return;
    }
    std::string out = (dir_->path() / "expected.json").string();
    std::string log = (dir_->path() / "reference.log").string();
    std::string cmd = shell_quoted(py) + " " + shell_quoted(FABKIT_CHAT_TEMPLATE_REFERENCE) + " " +
                      shell_quoted((testdata() / "chat_template_cases.json").string()) + " " +
                      shell_quoted((testdata() / "chat_templates").string()) + " " +
                      shell_quoted(out) + " >" + shell_quoted(log) + " 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      error_ = "the reference script failed: " + cmd + "\n" + read_file(log);
      return;
    }
    expected_ = new ordered_json(ordered_json::parse(read_file(out)));
  }
  static void TearDownTestSuite() {
    delete expected_;
    delete dir_;
    expected_ = nullptr;
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_TRUE(error_.empty()) << error_;
    ASSERT_NE(expected_, nullptr);
  }

  static testing::TempDir* dir_;
  static ordered_json* expected_;
  static std::string skip_, error_;
};
testing::TempDir* ChatTemplateParity::dir_ = nullptr;
ordered_json* ChatTemplateParity::expected_ = nullptr;
std::string ChatTemplateParity::skip_, ChatTemplateParity::error_;

std::tm fixed_clock(const ordered_json& now) {
  std::tm tm{};
  tm.tm_year = now[0].get<int>() - 1900;
  tm.tm_mon = now[1].get<int>() - 1;
  tm.tm_mday = now[2].get<int>();
  tm.tm_hour = now[3].get<int>();
  tm.tm_min = now[4].get<int>();
  tm.tm_sec = now[5].get<int>();
  std::time_t t = timegm(&tm);  // fills the weekday and day of year, as datetime knows them
  gmtime_r(&t, &tm);
  return tm;
}

TEST_P(ChatTemplateParity, RendersLikeJinja2) {
  const std::string name = GetParam();
  const ordered_json cases = load_cases();
  ASSERT_TRUE(cases["templates"].contains(name))
      << name << ".jinja has no entry (its special tokens) in chat_template_cases.json";
  const ordered_json& expected = (*expected_)["results"][name];
  const ordered_json& tokens = cases["templates"][name];

  ChatTemplate tmpl(read_file(testdata() / "chat_templates" / (name + ".jinja")));
  tmpl.set_clock([now = cases["now"]] { return fixed_clock(now); });

  size_t k = 0, rendered = 0, raised = 0;
  for (const auto& conv : cases["conversations"]) {
    for (bool agp : {false, true}) {
      const ordered_json& want = expected.at(k++);
      ChatTemplateInputs in;
      in.messages = conv["messages"];
      if (conv.contains("tools")) in.tools = conv["tools"];
      if (conv.contains("extra")) in.extra = conv["extra"];
      in.add_generation_prompt = agp;
      if (tokens.contains("bos_token")) in.bos_token = tokens["bos_token"].get<std::string>();
      if (tokens.contains("eos_token")) in.eos_token = tokens["eos_token"].get<std::string>();
      SCOPED_TRACE(name + " x " + conv["name"].get<std::string>() +
                   " add_generation_prompt=" + (agp ? "true" : "false"));
      std::string got;
      try {
        got = tmpl.render(in);
      } catch (const ChatTemplateError& e) {
        if (want.contains("output")) {
          ADD_FAILURE() << "jinja2 rendered " << want["output"].dump()
                        << " but the engine failed: " << e.what();
        } else if (want["error"] == "raise_exception") {
          EXPECT_EQ(e.kind(), ChatTemplateErrorKind::kRaised) << e.what();
          EXPECT_EQ(e.detail(), want["message"].get<std::string>());
          ++raised;
        } else {
          EXPECT_EQ(e.kind(), ChatTemplateErrorKind::kRuntime)
              << "jinja2: " << want["error"].get<std::string>() << ": "
              << want["message"].get<std::string>() << "\nengine: " << e.what();
        }
        continue;
      }
      if (!want.contains("output")) {
        ADD_FAILURE() << "jinja2 failed (" << want["error"].get<std::string>() << ": "
                      << want["message"].get<std::string>() << ") but the engine rendered "
                      << ordered_json(got).dump();
        continue;
      }
      EXPECT_EQ(got, want["output"].get<std::string>());
      ++rendered;
    }
  }
  EXPECT_EQ(k, expected.size());
  // The comparisons that count are renderings: every template renders most conversations.
  EXPECT_GE(rendered, 8u);
  RecordProperty("renderings_compared", static_cast<int>(rendered));
  RecordProperty("raise_exception_compared", static_cast<int>(raised));
  RecordProperty("jinja2_version", (*expected_)["jinja2_version"].get<std::string>());
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ChatTemplateParity, ::testing::ValuesIn(fixture_names()),
                         test_name);

// The fixtures cover the families the issue names; a removed file fails here, not silently.
TEST(ChatTemplateFixtures, CoverTheNamedFamilies) {
  std::set<std::string> names;
  for (const auto& n : fixture_names()) names.insert(n);
  for (const char* n :
       {"llama-2-7b-chat", "llama-3-8b-instruct", "llama-3.1-8b-instruct", "llama-3.2-3b-instruct",
        "mistral-7b-instruct-v0.2", "mistral-nemo-instruct-2407", "qwen2.5-7b-instruct",
        "chatml-openhermes-2.5-mistral-7b", "gemma-2-2b-it", "gemma-7b-it",
        "phi-3-mini-4k-instruct", "phi-3.5-mini-instruct"})
    EXPECT_TRUE(names.count(n)) << n;
  std::string sources = read_file(testdata() / "chat_templates" / "SOURCES.md");
  for (const auto& n : names) EXPECT_NE(sources.find(n + ".jinja"), std::string::npos) << n;
}

}  // namespace
}  // namespace fabkit::trainer::serve
