// Request parsing and validation: every field's wrong types and bad values are a 400 naming it.
#include <gtest/gtest.h>

#include <string>

#include "trainer/serve/http/api_error.h"
#include "trainer/serve/http/api_request.h"

namespace fabkit::serve {
namespace {

// The ApiError a body gives (status 0 when it parses).
ApiError error_of(const std::string& body, bool chat = false) {
  try {
    chat ? parse_chat_request(body) : parse_completion_request(body);
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "", "");
}

std::string completion(const std::string& extra) {
  return R"({"model":"m","prompt":"hi")" + (extra.empty() ? "" : "," + extra) + "}";
}
std::string chat(const std::string& extra) {
  return R"({"model":"m","messages":[{"role":"user","content":"hi"}])" +
         (extra.empty() ? "" : "," + extra) + "}";
}

TEST(ServeApiRequest, ParsesEveryField) {
  ApiRequest r = parse_completion_request(completion(
      R"("max_tokens":7,"temperature":0,"top_p":0.5,"top_k":3,"seed":-1,"stop":["a","bc"],"n":1,)"
      R"("stream":true,"stream_options":{"include_usage":true},"logprobs":null,"echo":false)"));
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(*r.prompt_text, "hi");
  EXPECT_EQ(*r.max_tokens, 7);
  EXPECT_EQ(r.sampling.temperature, 0.0);
  EXPECT_EQ(r.sampling.top_p, 0.5);
  EXPECT_EQ(r.sampling.top_k, 3);
  EXPECT_EQ(*r.sampling.seed, ~uint64_t{0});
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_FALSE(r.chat);
}

TEST(ServeApiRequest, DefaultsWhenAbsentOrNull) {
  ApiRequest r = parse_completion_request(completion(R"("max_tokens":null,"stop":null)"));
  EXPECT_FALSE(r.max_tokens);
  EXPECT_EQ(r.sampling.temperature, 1.0);
  EXPECT_EQ(r.sampling.top_p, 1.0);
  EXPECT_EQ(r.sampling.top_k, 0);
  EXPECT_FALSE(r.sampling.seed);
  EXPECT_TRUE(r.stop.empty());
  EXPECT_FALSE(r.stream);
}

TEST(ServeApiRequest, PromptForms) {
  EXPECT_EQ(*parse_completion_request(R"({"model":"m","prompt":["one"]})").prompt_text, "one");
  ApiRequest ids = parse_completion_request(R"({"model":"m","prompt":[1,2,3]})");
  EXPECT_FALSE(ids.prompt_text);
  EXPECT_EQ(ids.prompt_ids, (std::vector<int64_t>{1, 2, 3}));
  for (const char* bad : {R"({"model":"m"})", R"({"model":"m","prompt":5})",
                          R"({"model":"m","prompt":[]})", R"({"model":"m","prompt":["a","b"]})",
                          R"({"model":"m","prompt":[1,-2]})", R"({"model":"m","prompt":[1,"x"]})",
                          R"({"model":"m","prompt":[1.5]})", R"({"model":"m","prompt":{}})"}) {
    ApiError e = error_of(bad);
    EXPECT_EQ(e.status(), 400) << bad;
    EXPECT_EQ(e.param(), "prompt") << bad;
  }
}

TEST(ServeApiRequest, BadJson) {
  for (const char* bad : {"", "{", "{\"model\":}", "[1,2]", "\"text\"", "null", "{\"a\":1}x"}) {
    ApiError e = error_of(bad);
    EXPECT_EQ(e.status(), 400) << bad;
    EXPECT_EQ(e.code(), "invalid_json") << bad;
    EXPECT_EQ(e.type(), "invalid_request_error");
  }
}

struct BadField {
  std::string extra;
  std::string param;
  std::string says;  // part of the message
};

TEST(ServeApiRequest, EveryFieldsBadValuesNameTheField) {
  const BadField cases[] = {
      {R"("max_tokens":"5")", "max_tokens", "must be an integer, got a string"},
      {R"("max_tokens":5.5)", "max_tokens", "must be an integer"},
      {R"("max_tokens":0)", "max_tokens", "is 0"},
      {R"("max_tokens":-3)", "max_tokens", "is -3"},
      {R"("max_tokens":true)", "max_tokens", "got a boolean"},
      {R"("max_tokens":99999999999999999999)", "max_tokens", ""},
      {R"("temperature":"hot")", "temperature", "must be a number"},
      {R"("temperature":-0.1)", "temperature", "[0, 2]"},
      {R"("temperature":2.5)", "temperature", "[0, 2]"},
      {R"("top_p":0)", "top_p", "(0, 1]"},
      {R"("top_p":1.01)", "top_p", "(0, 1]"},
      {R"("top_p":[1])", "top_p", "got an array"},
      {R"("top_k":-2)", "top_k", "is -2"},
      {R"("top_k":1.5)", "top_k", "integer"},
      {R"("seed":"1")", "seed", "integer"},
      {R"("stop":5)", "stop", "string or a list of strings"},
      {R"("stop":["a",1])", "stop", "an item is an integer"},
      {R"("stop":["a","b","c","d","e"])", "stop", "at most 4"},
      {R"("stop":"")", "stop", "must not be empty"},
      {R"("n":2)", "n", "n = 1"},
      {R"("n":0)", "n", "is 0"},
      {R"("stream":"yes")", "stream", "must be a boolean"},
      {R"("stream_options":{"include_usage":true})", "stream_options", "'stream': true"},
      {R"("stream":true,"stream_options":[1])", "stream_options", "must be an object"},
      {R"("stream":true,"stream_options":{"include_usage":1})", "stream_options.include_usage",
       "boolean"},
      {R"("logprobs":true)", "logprobs", "not supported"},
      {R"("echo":true)", "echo", "not supported"},
      {R"("best_of":2)", "best_of", "not supported"},
      {R"("logit_bias":{"1":5})", "logit_bias", "not supported"},
      {R"("presence_penalty":0.5)", "presence_penalty", "not supported"},
      {R"("suffix":"x")", "suffix", "not supported"},
  };
  for (const auto& c : cases) {
    ApiError e = error_of(completion(c.extra));
    EXPECT_EQ(e.status(), 400) << c.extra;
    EXPECT_EQ(e.param(), c.param) << c.extra;
    EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << c.extra << ": " << e.what();
  }
}

TEST(ServeApiRequest, Model) {
  EXPECT_EQ(error_of(R"({"prompt":"x"})").param(), "model");
  EXPECT_EQ(error_of(R"({"model":3,"prompt":"x"})").param(), "model");
}

TEST(ServeApiRequest, Chat) {
  ApiRequest r = parse_chat_request(chat(R"("max_tokens":3,"max_completion_tokens":9)"));
  EXPECT_TRUE(r.chat);
  EXPECT_EQ(*r.max_tokens, 9);  // the newer field wins
  EXPECT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0]["content"], "hi");
  // Key order is the request's (the template's tojson sees it).
  ApiRequest ordered =
      parse_chat_request(R"({"model":"m","messages":[{"role":"user","z":1,"content":"x","a":2}]})");
  EXPECT_EQ(ordered.messages[0].dump(), R"({"role":"user","z":1,"content":"x","a":2})");

  const BadField cases[] = {
      {R"("max_completion_tokens":-1)", "max_completion_tokens", "is -1"},
      {R"("max_completion_tokens":"1")", "max_completion_tokens", "integer"},
      {R"("tools":[{"type":"function"}])", "tools", "not supported"},
      {R"("response_format":{"type":"json_object"})", "response_format", "not supported"},
  };
  for (const auto& c : cases) {
    ApiError e = error_of(chat(c.extra), true);
    EXPECT_EQ(e.param(), c.param) << c.extra;
    EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
  }
  const std::pair<const char*, const char*> bad_messages[] = {
      {R"({"model":"m"})", "messages"},
      {R"({"model":"m","messages":[]})", "messages"},
      {R"({"model":"m","messages":"hi"})", "messages"},
      {R"({"model":"m","messages":[5]})", "messages[0]"},
      {R"({"model":"m","messages":[{"content":"x"}]})", "messages[0].role"},
      {R"({"model":"m","messages":[{"role":"user","content":"x"},{"role":"user","content":7}]})",
       "messages[1].content"},
  };
  for (const auto& [body, param] : bad_messages) {
    ApiError e = error_of(body, true);
    EXPECT_EQ(e.status(), 400) << body;
    EXPECT_EQ(e.param(), param) << body;
  }
}

TEST(ServeApiRequest, ErrorJsonShape) {
  ApiError e = error_of(completion(R"("top_p":7)"));
  nlohmann::json j = e.to_json();
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "top_p");
  EXPECT_TRUE(j["error"]["message"].is_string());
  EXPECT_TRUE(j["error"].contains("code"));
  EXPECT_TRUE(ApiError(503, "busy", "server_error").to_json()["error"]["param"].is_null());
}

}  // namespace
}  // namespace fabkit::serve
