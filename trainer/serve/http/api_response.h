// OpenAI's response shapes for completions and chat completions, whole and as stream chunks, and
// the server-sent-events framing of a stream.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace fabkit::serve {

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

// What every response and chunk of one request shares.
struct ResponseHeader {
  bool chat = false;
  std::string id;       // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
};

// finish_reason as OpenAI spells it: "stop" or "length" (null while a stream runs).
using FinishText = std::optional<std::string>;

nlohmann::json usage_json(const Usage& usage);
// The non-streamed body.
nlohmann::json full_response(const ResponseHeader& h, const std::string& text,
                             const std::string& finish, const Usage& usage);
// One stream chunk carrying `text` (for chat the first chunk also carries role "assistant").
// include_usage adds "usage": null to every chunk but the final usage one, as OpenAI does.
nlohmann::json stream_chunk(const ResponseHeader& h, const std::string& text, bool first,
                            const FinishText& finish, bool include_usage);
// The last chunk with stream_options.include_usage: no choices, the usage.
nlohmann::json usage_chunk(const ResponseHeader& h, const Usage& usage);

// "data: <json>\n\n", and the stream's end "data: [DONE]\n\n".
std::string sse_event(const nlohmann::json& payload);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

// A new response id with OpenAI's prefix and 24 random hex digits.
std::string new_response_id(bool chat);

}  // namespace fabkit::serve
