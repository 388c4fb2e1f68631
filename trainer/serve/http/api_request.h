// The request bodies of POST /v1/completions and /v1/chat/completions, parsed and validated into
// plain structs. Every refusal is an ApiError 400 naming the field, the value's problem and what is
// accepted, so a client sees what to fix; nothing reaches the backend unvalidated.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainer/serve/backend/generation_backend.h"

namespace fabkit::serve {

// OpenAI's limits: at most 4 stop strings; temperature in [0, 2].
inline constexpr size_t kMaxStopStrings = 4;
inline constexpr double kMaxTemperature = 2.0;

struct ApiRequest {
  bool chat = false;
  std::string model;
  // /v1/completions: the prompt as text, or as token ids (then prompt_text is unset).
  std::optional<std::string> prompt_text;
  std::vector<int64_t> prompt_ids;
  // /v1/chat/completions: OpenAI messages in the request's key order, for the chat template.
  nlohmann::ordered_json messages;
  // max_tokens (or, for chat, max_completion_tokens, which wins as in OpenAI's API); unset: the
  // server's default (completions: 16, chat: what the context leaves).
  std::optional<int64_t> max_tokens;
  std::string max_tokens_field = "max_tokens";  // the field that set it, for messages
  SamplingParams sampling;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
};

// Throw ApiError (400) on a body that is not a JSON object or a field of the wrong type or value.
ApiRequest parse_completion_request(const std::string& body);
ApiRequest parse_chat_request(const std::string& body);

}  // namespace fabkit::serve
