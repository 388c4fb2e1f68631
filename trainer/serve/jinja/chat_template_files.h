// Where a model's chat template comes from, as Hugging Face's tokenizer finds it: the model
// folder's chat_template.jinja (what transformers saves since it moved templates out of the
// config), additional_chat_templates/NAME.jinja for named ones, or tokenizer_config.json's
// "chat_template" (a string, or a list of {"name", "template"}); and the special tokens HF passes
// to the template, from tokenizer_config.json (a string or an AddedToken {"content": ...}).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace fabkit::trainer::serve {

struct ChatTemplateFiles {
  std::string source;  // the template text
  std::string origin;  // where it came from, for messages ("DIR/tokenizer_config.json ...")
  // bos_token, eos_token, unk_token, pad_token: those tokenizer_config.json sets.
  std::map<std::string, std::string> special_tokens;
};

// HF's choice among named templates: `name` if given, else "tool_use" when the request has tools
// and the model has one, else "default". Throws std::runtime_error naming the file and the fix
// (--chat-template FILE) when the model has no template or not the one asked for.
ChatTemplateFiles load_chat_template(const std::filesystem::path& model_dir,
                                     const std::string& name = "", bool has_tools = false);

// --chat-template FILE: the file's text; special tokens still from the model folder.
ChatTemplateFiles load_chat_template_file(const std::filesystem::path& file,
                                          const std::filesystem::path& model_dir);

}  // namespace fabkit::trainer::serve
