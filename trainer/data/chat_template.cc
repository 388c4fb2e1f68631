#include "trainer/data/chat_template.h"

#include "common/errors.h"
#include "trainer/model/ignore_label.h"

namespace fabkit::trainer {
namespace {

void append(Sequence& s, const std::vector<int64_t>& ids, bool learn) {
  for (int64_t id : ids) {
    s.ids.push_back(id);
    s.labels.push_back(learn ? id : kIgnoreLabel);
  }
}

std::vector<int64_t> special(const Tokenizer& tok, const std::string& token) {
  if (auto id = tok.special_token_id(token)) return {*id};
  return tok.encode(token);
}

}  // namespace

Sequence render_chatml(const Json& messages, const Tokenizer& tok, const std::string& where) {
  if (!messages.is_array() || messages.empty())
    throw UsageError(where + ": \"messages\" must be a non-empty array of {role, content} objects");
  Sequence s;
  if (tok.bos_id()) append(s, {*tok.bos_id()}, false);
  auto im_start = special(tok, "<|im_start|>");
  auto im_end = special(tok, "<|im_end|>");
  size_t i = 0;
  for (const Json& m : messages) {
    std::string at = where + ": messages[" + std::to_string(i++) + "]";
    if (!m.is_object() || !m.contains("role") || !m.at("role").is_string())
      throw UsageError(at + ": needs a string \"role\"");
    if (!m.contains("content") || !m.at("content").is_string())
      throw UsageError(at + ": needs a string \"content\" (structured content parts are not supported)");
    std::string role = m.at("role").get<std::string>();
    if (role != "system" && role != "user" && role != "assistant" && role != "tool")
      throw UsageError(at + ": role \"" + role + "\" is not one of system, user, assistant, tool");
    bool learn = role == "assistant";
    append(s, im_start, false);
    append(s, tok.encode(role + "\n"), false);
    append(s, tok.encode(m.at("content").get<std::string>()), learn);
    append(s, im_end, learn);
    append(s, tok.encode("\n"), false);
  }
  return s;
}

}  // namespace fabkit::trainer
