// OpenAI's response and chunk shapes, and SSE framing.
#include <gtest/gtest.h>

#include "trainer/serve/http/api_response.h"

namespace fabkit::serve {
namespace {

ResponseHeader header(bool chat) { return ResponseHeader{chat, "id-1", 1700000000, "tiny"}; }

TEST(ServeApiResponse, CompletionShape) {
  nlohmann::json r = full_response(header(false), "hello", "length", Usage{3, 5});
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["id"], "id-1");
  EXPECT_EQ(r["model"], "tiny");
  EXPECT_EQ(r["created"], 1700000000);
  EXPECT_EQ(r["choices"][0]["text"], "hello");
  EXPECT_EQ(r["choices"][0]["index"], 0);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(r["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(r["usage"],
            (nlohmann::json{{"prompt_tokens", 3}, {"completion_tokens", 5}, {"total_tokens", 8}}));
}

TEST(ServeApiResponse, ChatShape) {
  nlohmann::json r = full_response(header(true), "hi", "stop", Usage{1, 1});
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["choices"][0]["message"], (nlohmann::json{{"role", "assistant"}, {"content", "hi"}}));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
}

TEST(ServeApiResponse, ChatChunks) {
  nlohmann::json first = stream_chunk(header(true), "", true, std::nullopt, false);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], (nlohmann::json{{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(first.contains("usage"));
  nlohmann::json mid = stream_chunk(header(true), "ab", false, std::nullopt, true);
  EXPECT_EQ(mid["choices"][0]["delta"], (nlohmann::json{{"content", "ab"}}));
  EXPECT_TRUE(mid.contains("usage") && mid["usage"].is_null());
  nlohmann::json last = stream_chunk(header(true), "", false, std::string("length"), false);
  EXPECT_EQ(last["choices"][0]["delta"], nlohmann::json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  nlohmann::json usage = usage_chunk(header(true), Usage{2, 3});
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["total_tokens"], 5);
}

TEST(ServeApiResponse, CompletionChunks) {
  nlohmann::json c = stream_chunk(header(false), "xy", true, std::nullopt, false);
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["choices"][0]["text"], "xy");
  EXPECT_FALSE(c["choices"][0].contains("delta"));
}

TEST(ServeApiResponse, SseFraming) {
  EXPECT_EQ(sse_event(nlohmann::json{{"a", "b\nc"}}), "data: {\"a\":\"b\\nc\"}\n\n");
  EXPECT_EQ(std::string(kSseDone), "data: [DONE]\n\n");
  // Invalid UTF-8 never makes dump() throw.
  EXPECT_EQ(sse_event(nlohmann::json{{"t", std::string("\xFF")}}),
            "data: {\"t\":\"\xEF\xBF\xBD\"}\n\n");
}

TEST(ServeApiResponse, Ids) {
  std::string a = new_response_id(true), b = new_response_id(true);
  EXPECT_EQ(a.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(new_response_id(false).rfind("cmpl-", 0), 0u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.size(), std::string("chatcmpl-").size() + 24);
}

}  // namespace
}  // namespace fabkit::serve
