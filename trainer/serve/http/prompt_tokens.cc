#include "trainer/serve/http/prompt_tokens.h"

#include <algorithm>
#include <string>

#include "trainer/serve/http/api_error.h"

namespace fabkit::serve {
namespace {

std::optional<std::string> special(const ServedModel& model, const char* name) {
  auto it = model.special_tokens.find(name);
  if (it == model.special_tokens.end()) return std::nullopt;
  return it->second;
}

std::string render_chat(const ApiRequest& request, const ServedModel& model) {
  if (model.chat_template == nullptr) {
    throw ApiError(400,
                   "this model has no chat template, so /v1/chat/completions cannot format the "
                   "messages; use /v1/completions, or restart with --chat-template FILE",
                   "invalid_request_error", "messages", "no_chat_template");
  }
  trainer::serve::ChatTemplateInputs inputs;
  inputs.messages = request.messages;
  inputs.add_generation_prompt = true;
  inputs.bos_token = special(model, "bos_token");
  inputs.eos_token = special(model, "eos_token");
  for (const auto& [name, value] : model.special_tokens) {
    if (name != "bos_token" && name != "eos_token") inputs.extra[name] = value;
  }
  try {
    return model.chat_template->render(inputs);
  } catch (const trainer::serve::ChatTemplateError& e) {
    throw ApiError(400, std::string("the chat template refused these messages: ") + e.what(),
                   "invalid_request_error", "messages", "chat_template_error");
  }
}

}  // namespace

std::vector<int64_t> prompt_token_ids(const ApiRequest& request, const ServedModel& model,
                                      int64_t vocab_size) {
  std::vector<int64_t> ids;
  const char* field = request.chat ? "messages" : "prompt";
  if (request.chat) {
    // The template writes the BOS text itself where the model wants one.
    ids = model.tokenizer->encode(render_chat(request, model));
  } else if (request.prompt_text) {
    if (model.add_bos) {
      if (auto bos = model.tokenizer->bos_id()) ids.push_back(*bos);
    }
    std::vector<int64_t> text = model.tokenizer->encode(*request.prompt_text);
    ids.insert(ids.end(), text.begin(), text.end());
  } else {
    ids = request.prompt_ids;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] >= vocab_size) {
        throw bad_field("prompt", "'prompt' token id " + std::to_string(ids[i]) + " at index " +
                                      std::to_string(i) + " is outside the vocabulary (0.." +
                                      std::to_string(vocab_size - 1) + ")");
      }
    }
  }
  if (ids.empty()) {
    throw bad_field(
        field, std::string("'") + field + "' is empty: the model needs at least one prompt token");
  }
  return ids;
}

int64_t resolve_max_tokens(const ApiRequest& request, int64_t prompt_tokens,
                           int64_t context_length) {
  const char* field = request.chat ? "messages" : "prompt";
  const int64_t room = context_length - prompt_tokens;
  if (room < 1) {
    throw bad_field(field, "this model's maximum context length is " +
                               std::to_string(context_length) + " tokens, and the prompt has " +
                               std::to_string(prompt_tokens) +
                               " tokens, leaving none to generate; shorten the prompt");
  }
  if (!request.max_tokens) {
    return request.chat ? room : std::min(kDefaultCompletionMaxTokens, room);
  }
  if (*request.max_tokens > room) {
    const std::string& name = request.max_tokens_field;
    throw bad_field(name, "this model's maximum context length is " +
                              std::to_string(context_length) + " tokens; the prompt has " +
                              std::to_string(prompt_tokens) + " and " + name + " asks for " +
                              std::to_string(*request.max_tokens) + "; ask for at most " +
                              std::to_string(room));
  }
  return *request.max_tokens;
}

}  // namespace fabkit::serve
