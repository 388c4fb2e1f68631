// A model's chat template (tokenizer_config.json's "chat_template", or --chat-template FILE),
// rendered the way Hugging Face's apply_chat_template renders it.
//
// Why hand-written: no C++ Jinja library is packaged for Debian, so fabkit implements the subset
// of Jinja that chat templates use, and tests it template by template against Python's jinja2 with
// HF's settings (tests/unit/serve). HF's settings, followed here: jinja2's
// ImmutableSandboxedEnvironment with trim_blocks=True and lstrip_blocks=True, the loopcontrols
// extension ({% break %}, {% continue %}), a tojson filter that is json.dumps(ensure_ascii=False),
// and the globals raise_exception(message) and strftime_now(format). The variables are messages,
// tools (None when absent), documents (None), add_generation_prompt and the tokenizer's special
// tokens, plus any extra template arguments.
//
// What it does not implement it refuses with the construct named and its line:column (e.g.
// "chat template line 3:12: '{% include %}' is not supported"); it never renders such a template
// differently from jinja2. docs/fabtrain-serve.md lists what is supported and refused.
#pragma once

#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "trainer/serve/jinja/error.h"
#include "trainer/serve/jinja/renderer.h"

namespace fabkit::trainer::serve {

using ChatTemplateError = jinja::TemplateError;
using ChatTemplateErrorKind = jinja::ErrorKind;
using ChatTemplateLimits = jinja::RenderLimits;

struct ChatTemplateInputs {
  // The OpenAI-style messages, in the request's key order (ordered_json: tojson and dict
  // iteration in templates see keys in that order, as Python's json.loads keeps them).
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  // null (no tools: the template sees None) or an array of tool schemas.
  nlohmann::ordered_json tools = nullptr;
  bool add_generation_prompt = false;
  // Special tokens; absent ones are undefined in the template (HF passes only the tokenizer's).
  std::optional<std::string> bos_token, eos_token;
  // More template variables (an object): e.g. enable_thinking, date_string, custom_tools, and
  // the tokenizer's other special tokens (unk_token, pad_token) where a template uses them.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

class ChatTemplate {
 public:
  // Parses the template; throws ChatTemplateError (kSyntax or kUnsupported) with line:column.
  explicit ChatTemplate(const std::string& source);
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // Renders; throws ChatTemplateError: kRaised carries the template's raise_exception message
  // in detail(), kRuntime what jinja2 also fails on, kLimit a template over the limits. Safe to
  // call from several threads at once (each render has its own state).
  std::string render(const ChatTemplateInputs& inputs) const;

  // strftime_now()'s clock (Llama 3.1+ templates print today's date): local time by default.
  void set_clock(std::function<std::tm()> clock);
  void set_limits(const ChatTemplateLimits& limits);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fabkit::trainer::serve
