// Finding a model's chat template and special tokens the way HF's tokenizer does: the folder's
// chat_template.jinja first, else tokenizer_config.json's "chat_template" (a string or named
// templates: the asked-for one, "tool_use" with tools, else "default"), tokens as strings or
// AddedTokens.
#include <gtest/gtest.h>

#include "tests/support/ttar.h"
#include "trainer/serve/jinja/chat_template_files.h"

namespace fabkit::trainer::serve {
namespace {

using testing::TempDir;
using testing::write_file;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(ChatTemplateFiles, StringTemplateAndPlainTokens) {
  TempDir dir("ct_files");
  write_file(dir.path() / "tokenizer_config.json",
             R"({"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "pad_token": null,
                 "chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"})");
  ChatTemplateFiles f = load_chat_template(dir.path());
  EXPECT_EQ(f.source, "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}");
  EXPECT_EQ(f.special_tokens.at("bos_token"), "<|begin_of_text|>");
  EXPECT_EQ(f.special_tokens.at("eos_token"), "<|eot_id|>");
  EXPECT_EQ(f.special_tokens.count("pad_token"), 0u);  // null: not passed, as HF does
  EXPECT_NE(f.origin.find("tokenizer_config.json (default)"), std::string::npos) << f.origin;
}

TEST(ChatTemplateFiles, NamedTemplatesAndAddedTokens) {
  TempDir dir("ct_files");
  write_file(dir.path() / "tokenizer_config.json",
             R"({"bos_token": {"content": "<s>", "lstrip": false, "__type": "AddedToken"},
                 "chat_template": [{"name": "default", "template": "D"},
                                   {"name": "tool_use", "template": "T"},
                                   {"name": "rag", "template": "R"}]})");
  EXPECT_EQ(load_chat_template(dir.path()).source, "D");
  EXPECT_EQ(load_chat_template(dir.path(), "", /*has_tools=*/true).source, "T");
  EXPECT_EQ(load_chat_template(dir.path(), "rag").source, "R");
  EXPECT_EQ(load_chat_template(dir.path()).special_tokens.at("bos_token"), "<s>");
  std::string e = error_of([&] { load_chat_template(dir.path(), "nope"); });
  EXPECT_NE(e.find("no chat template named 'nope' (it has: default, rag, tool_use)"),
            std::string::npos)
      << e;
}

TEST(ChatTemplateFiles, NamedTemplatesWithoutDefault) {
  TempDir dir("ct_files");
  write_file(dir.path() / "tokenizer_config.json",
             R"({"chat_template": [{"name": "tool_use", "template": "T"}]})");
  EXPECT_EQ(load_chat_template(dir.path(), "", true).source, "T");
  std::string e = error_of([&] { load_chat_template(dir.path()); });
  EXPECT_NE(e.find("none named 'default'"), std::string::npos) << e;
  EXPECT_NE(e.find("--chat-template FILE"), std::string::npos) << e;
}

TEST(ChatTemplateFiles, JinjaFileComesFirst) {
  TempDir dir("ct_files");
  write_file(dir.path() / "tokenizer_config.json",
             R"({"eos_token": "</s>", "chat_template": "from the config"})");
  write_file(dir.path() / "chat_template.jinja", "from the file\n");
  write_file(dir.path() / "additional_chat_templates" / "tool_use.jinja", "tools file");
  ChatTemplateFiles f = load_chat_template(dir.path());
  EXPECT_EQ(f.source, "from the file\n");
  EXPECT_EQ(f.special_tokens.at("eos_token"), "</s>");
  EXPECT_EQ(load_chat_template(dir.path(), "", true).source, "tools file");
}

TEST(ChatTemplateFiles, MissingOrMalformed) {
  TempDir dir("ct_files");
  write_file(dir.path() / "tokenizer_config.json", R"({"eos_token": "</s>"})");
  std::string e = error_of([&] { load_chat_template(dir.path()); });
  EXPECT_NE(e.find("has no chat template"), std::string::npos) << e;
  EXPECT_NE(e.find("--chat-template FILE"), std::string::npos) << e;

  write_file(dir.path() / "tokenizer_config.json", R"({"chat_template": 3})");
  e = error_of([&] { load_chat_template(dir.path()); });
  EXPECT_NE(e.find("neither a string nor a list"), std::string::npos) << e;

  write_file(dir.path() / "tokenizer_config.json", R"({"bos_token": 1, "chat_template": "x"})");
  e = error_of([&] { load_chat_template(dir.path()); });
  EXPECT_NE(e.find("\"bos_token\" is neither a string"), std::string::npos) << e;

  write_file(dir.path() / "tokenizer_config.json", "{ not json");
  e = error_of([&] { load_chat_template(dir.path()); });
  EXPECT_NE(e.find("tokenizer_config.json: "), std::string::npos) << e;
}

TEST(ChatTemplateFiles, OverrideFileKeepsTheModelsTokens) {
  TempDir dir("ct_files");
  write_file(dir.path() / "tokenizer_config.json", R"({"bos_token": "<s>", "chat_template": "x"})");
  write_file(dir.path() / "mine.jinja", "{{ bos_token }}mine");
  ChatTemplateFiles f = load_chat_template_file(dir.path() / "mine.jinja", dir.path());
  EXPECT_EQ(f.source, "{{ bos_token }}mine");
  EXPECT_EQ(f.special_tokens.at("bos_token"), "<s>");
  std::string e =
      error_of([&] { load_chat_template_file(dir.path() / "absent.jinja", dir.path()); });
  EXPECT_NE(e.find("absent.jinja: cannot be read"), std::string::npos) << e;
}

}  // namespace
}  // namespace fabkit::trainer::serve
