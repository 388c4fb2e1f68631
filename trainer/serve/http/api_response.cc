#include "trainer/serve/http/api_response.h"

#include <cstdio>
#include <random>

namespace fabkit::serve {
namespace {

nlohmann::json base(const ResponseHeader& h, bool chunk) {
  const char* object =
      h.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return {{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model}};
}

nlohmann::json finish_json(const FinishText& f) {
  return f ? nlohmann::json(*f) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

nlohmann::json full_response(const ResponseHeader& h, const std::string& text,
                             const std::string& finish, const Usage& usage) {
  nlohmann::json r = base(h, false);
  nlohmann::json choice = {{"index", 0}};
  if (h.chat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish;
  r["choices"] = nlohmann::json::array({choice});
  r["usage"] = usage_json(usage);
  return r;
}

nlohmann::json stream_chunk(const ResponseHeader& h, const std::string& text, bool first,
                            const FinishText& finish, bool include_usage) {
  nlohmann::json r = base(h, true);
  nlohmann::json choice = {{"index", 0}};
  if (h.chat) {
    nlohmann::json delta = nlohmann::json::object();
    if (first) delta["role"] = "assistant";
    if (first || !text.empty()) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish_json(finish);
  r["choices"] = nlohmann::json::array({choice});
  if (include_usage) r["usage"] = nullptr;
  return r;
}

nlohmann::json usage_chunk(const ResponseHeader& h, const Usage& usage) {
  nlohmann::json r = base(h, true);
  r["choices"] = nlohmann::json::array();
  r["usage"] = usage_json(usage);
  return r;
}

std::string sse_event(const nlohmann::json& payload) {
  // Generated text is sanitized to valid UTF-8 before it gets here; replace guards the rest.
  return "data: " + payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}

std::string new_response_id(bool chat) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[32];
  std::snprintf(hex, sizeof hex, "%016llx%08llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng() & 0xffffffffULL));
  return std::string(chat ? "chatcmpl-" : "cmpl-") + hex;
}

}  // namespace fabkit::serve
