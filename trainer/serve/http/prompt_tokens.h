// From a parsed request to what the backend takes: the prompt's token ids (a completion's text or
// ids, a chat's messages through the chat template) and the number of tokens to generate, checked
// against the model's vocabulary and context.
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/serve/http/api_request.h"
#include "trainer/serve/http/http_server.h"

namespace fabkit::serve {

// OpenAI's default max_tokens for /v1/completions.
inline constexpr int64_t kDefaultCompletionMaxTokens = 16;

// ApiError 400 for token ids outside the vocabulary, an empty prompt, a chat template that refuses
// the messages (its message), or no chat template.
std::vector<int64_t> prompt_token_ids(const ApiRequest& request, const ServedModel& model,
                                      int64_t vocab_size);

// The request's max_tokens, or the default (completions: 16, chat: what the context leaves),
// limited by the context; ApiError 400 naming both numbers when the prompt leaves no room or the
// request asks for more than the context holds.
int64_t resolve_max_tokens(const ApiRequest& request, int64_t prompt_tokens,
                           int64_t context_length);

}  // namespace fabkit::serve
