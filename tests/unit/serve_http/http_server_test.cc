// The server end to end on 127.0.0.1 with the fake backend: endpoints, streaming, errors, limits,
// queueing, disconnects, authentication, metrics. Every client call has a timeout.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/unit/serve_http/serve_harness.h"

namespace fabkit::serve::fake {
namespace {

using namespace std::chrono_literals;

std::string completion_body(const std::string& extra = "") {
  return R"({"model":"tiny","prompt":"abc")" + (extra.empty() ? "" : "," + extra) + "}";
}

TEST(ServeHttp, ListsTheModel) {
  Harness h;
  auto r = h.get("/v1/models");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["object"], "list");
  EXPECT_EQ(r.json()["data"][0]["id"], "tiny");
  EXPECT_EQ(r.json()["data"][0]["object"], "model");
  EXPECT_EQ(h.get("/health").status, 200);
}

TEST(ServeHttp, Completion) {
  Harness h;
  auto r =
      h.post("/v1/completions", completion_body(R"("max_tokens":5,"temperature":0.5,"seed":7)"));
  ASSERT_EQ(r.status, 200) << r.body;
  nlohmann::json j = r.json();
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "abcab");  // the fake backend echoes the prompt, cycled
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
  EXPECT_EQ(j["usage"]["total_tokens"], 8);
  // What reached the backend.
  GenerationRequest g = h.backend.requests().at(0);
  EXPECT_EQ(g.prompt, (std::vector<int64_t>{'a', 'b', 'c'}));
  EXPECT_EQ(g.max_tokens, 5);
  EXPECT_EQ(g.sampling.temperature, 0.5);
  EXPECT_EQ(*g.sampling.seed, 7u);
  // The default max_tokens is OpenAI's 16.
  auto d = h.post("/v1/completions", completion_body());
  EXPECT_EQ(d.json()["usage"]["completion_tokens"], 16);
}

TEST(ServeHttp, TokenIdPrompt) {
  Harness h;
  auto r = h.post("/v1/completions", R"({"model":"tiny","prompt":[104,105],"max_tokens":3})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["choices"][0]["text"], "hih");
  auto bad = h.post("/v1/completions", R"({"model":"tiny","prompt":[104,9999]})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.json()["error"]["param"], "prompt");
  EXPECT_NE(bad.body.find("9999"), std::string::npos);
}

TEST(ServeHttp, EosEndsWithStop) {
  FakeBackendOptions o;
  o.eos_after = 2;
  Harness h(o);
  auto r = h.post("/v1/completions", completion_body(R"("max_tokens":10)"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["choices"][0]["text"], "ab");  // the EOS token is not text
  EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r.json()["usage"]["completion_tokens"], 3);
}

TEST(ServeHttp, StopStringCancelsTheBackendRequest) {
  FakeBackendOptions o;
  o.step_interval = 5ms;
  Harness h(o);
  auto r =
      h.post("/v1/completions",
             R"({"model":"tiny","prompt":"hello world ","max_tokens":200,"stop":["wor","zz"]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["choices"][0]["text"], "hello ");
  EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "stop");
  EXPECT_LT(r.json()["usage"]["completion_tokens"].get<int>(), 200);
  ASSERT_TRUE(h.backend.wait_idle(10s));
  EXPECT_EQ(h.backend.cancelled(), 1);
}

TEST(ServeHttp, ChatGoesThroughTheTemplate) {
  Harness h;
  auto r = h.post("/v1/chat/completions",
                  R"({"model":"tiny","messages":[{"role":"user","content":"hi"}],)"
                  R"("max_completion_tokens":12})");
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string prompt = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
  GenerationRequest g = h.backend.requests().at(0);
  EXPECT_EQ(g.prompt, h.tokenizer.encode(prompt));
  EXPECT_EQ(g.stop_token_ids, (std::vector<int64_t>{257, 260}));
  nlohmann::json j = r.json();
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], prompt.substr(0, 12));
  EXPECT_EQ(j["usage"]["prompt_tokens"], static_cast<int>(prompt.size()));
  // Without max tokens, chat may use the rest of the context.
  auto all = h.post("/v1/chat/completions",
                    R"({"model":"tiny","messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(all.json()["usage"]["total_tokens"], 256);
  EXPECT_EQ(all.json()["choices"][0]["finish_reason"], "length");
}

TEST(ServeHttp, ChatTemplateRefusalIsA400) {
  Harness h;
  // The ChatML template adds content to strings: a list content is a template error.
  auto r = h.post("/v1/chat/completions",
                  R"({"model":"tiny","messages":[{"role":"user","content":[{"type":"text"}]}]})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["param"], "messages");
}

struct Streamed {
  std::string framing_error;
  std::vector<nlohmann::json> chunks;
  bool done = false;  // ended with [DONE]
  std::string text;
};

Streamed stream(const Harness& h, const std::string& path, const std::string& body) {
  auto r = h.post(path, body);
  Streamed s;
  EXPECT_EQ(r.status, 200) << r.body;
  std::vector<std::string> payloads = sse_payloads(r.body, &s.framing_error);
  for (size_t i = 0; i < payloads.size(); ++i) {
    if (payloads[i] == "[DONE]") {
      s.done = i + 1 == payloads.size();
      break;
    }
    s.chunks.push_back(nlohmann::json::parse(payloads[i]));
    const auto& c = s.chunks.back();
    if (c.contains("choices") && !c["choices"].empty()) {
      const auto& choice = c["choices"][0];
      if (choice.contains("text")) s.text += choice["text"].get<std::string>();
      if (choice.contains("delta") && choice["delta"].contains("content")) {
        s.text += choice["delta"]["content"].get<std::string>();
      }
    }
  }
  return s;
}

TEST(ServeHttp, StreamedCompletion) {
  Harness h;
  Streamed s = stream(
      h, "/v1/completions",
      completion_body(R"("max_tokens":7,"stream":true,"stream_options":{"include_usage":true})"));
  EXPECT_EQ(s.framing_error, "");
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.text, "abcabca");
  ASSERT_GE(s.chunks.size(), 3u);
  const auto& last = s.chunks.back();
  EXPECT_TRUE(last["choices"].empty());
  EXPECT_EQ(last["usage"]["completion_tokens"], 7);
  const auto& finish = s.chunks[s.chunks.size() - 2];
  EXPECT_EQ(finish["choices"][0]["finish_reason"], "length");
  for (size_t i = 0; i + 2 < s.chunks.size(); ++i) {
    EXPECT_TRUE(s.chunks[i]["choices"][0]["finish_reason"].is_null());
    EXPECT_TRUE(s.chunks[i]["usage"].is_null());
    EXPECT_EQ(s.chunks[i]["object"], "text_completion");
  }
}

TEST(ServeHttp, StreamedChat) {
  Harness h;
  Streamed s = stream(h, "/v1/chat/completions",
                      R"({"model":"tiny","messages":[{"role":"user","content":"yo"}],)"
                      R"("max_tokens":4,"stream":true})");
  EXPECT_EQ(s.framing_error, "");
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.text, "<|im");
  ASSERT_GE(s.chunks.size(), 2u);
  EXPECT_EQ(s.chunks.front()["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(s.chunks.back()["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(s.chunks.back()["choices"][0]["delta"], nlohmann::json::object());
  for (const auto& c : s.chunks) {
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    EXPECT_FALSE(c.contains("usage"));
  }
}

TEST(ServeHttp, StreamNeverSplitsACharacter) {
  FakeBackendOptions o;
  const std::string text = "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";  // é€😀
  for (unsigned char c : text) o.script.push_back(c);
  Harness h(o);
  Streamed s = stream(h, "/v1/completions", completion_body(R"("max_tokens":9,"stream":true)"));
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.text, text);
  for (const auto& c : s.chunks) {
    // nlohmann's parse accepted each chunk, so each is valid UTF-8; none holds part of a char.
    std::string piece = c["choices"][0]["text"];
    EXPECT_EQ(piece.find("\xEF\xBF\xBD"), std::string::npos);
  }
}

TEST(ServeHttp, BackendErrorIsA500) {
  FakeBackendOptions o;
  o.error_after = 2;
  Harness h(o);
  auto r = h.post("/v1/completions", completion_body());
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.json()["error"]["type"], "server_error");
  EXPECT_NE(r.body.find("failed on purpose"), std::string::npos);
  Streamed s = stream(h, "/v1/completions", completion_body(R"("stream":true)"));
  EXPECT_TRUE(s.done);
  ASSERT_FALSE(s.chunks.empty());
  EXPECT_TRUE(s.chunks.back().contains("error"));
}

TEST(ServeHttp, Errors) {
  Harness h;
  struct Case {
    std::string path, body;
    int status;
    std::string param, says;
  };
  const Case cases[] = {
      {"/v1/completions", "{not json", 400, "", "not valid JSON"},
      {"/v1/completions", "[]", 400, "", "JSON object"},
      {"/v1/completions", completion_body(R"("max_tokens":"3")"), 400, "max_tokens", "integer"},
      {"/v1/completions", completion_body(R"("max_tokens":-1)"), 400, "max_tokens", "is -1"},
      {"/v1/completions", completion_body(R"("max_tokens":1000000000000)"), 400, "max_tokens",
       "maximum context length is 256 tokens; the prompt has 3"},
      {"/v1/completions", R"({"model":"tiny","prompt":")" + std::string(300, 'x') + "\"}", 400,
       "prompt", "256 tokens, and the prompt has 300"},
      {"/v1/completions", R"({"model":"tiny","prompt":""})", 400, "prompt", "empty"},
      {"/v1/completions", R"({"model":"gpt-4","prompt":"x"})", 404, "model", "does not exist"},
      {"/v1/chat/completions", R"({"model":"tiny","messages":{}})", 400, "messages", ""},
      {"/v1/chat/completions",
       R"({"model":"tiny","messages":[{"role":"user","content":"x"}],"max_tokens":999})", 400,
       "max_tokens", "max_tokens asks for 999"},
      {"/v1/chat/completions",
       R"({"model":"tiny","messages":[{"role":"user","content":"x"}],"max_completion_tokens":999})",
       400, "max_completion_tokens", "max_completion_tokens asks for 999"},
      {"/v1/completions", completion_body(R"("n":3)"), 400, "n", "n = 1"},
      {"/v1/nothing", "{}", 404, "", "no route"},
  };
  for (const auto& c : cases) {
    auto r = h.post(c.path, c.body);
    EXPECT_EQ(r.status, c.status) << c.body << " -> " << r.body;
    nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
    EXPECT_EQ(j["error"]["param"].is_null() ? "" : j["error"]["param"].get<std::string>(), c.param)
        << c.body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(c.says), std::string::npos)
        << j["error"]["message"];
  }
  EXPECT_EQ(h.get("/nope").status, 404);
  EXPECT_TRUE(h.backend.requests().empty());  // nothing invalid reached the backend
}

TEST(ServeHttp, BodyLimit) {
  ServerConfig c;
  c.max_body_bytes = 64 * 1024;
  Harness h({}, c);
  std::string big = completion_body(R"("pad":")" + std::string(10 << 20, 'x') + "\"");
  auto r = h.post("/v1/completions", big);
  EXPECT_EQ(r.status, 413) << httplib::to_string(r.error);
  EXPECT_EQ(r.json()["error"]["code"], "body_too_large");
  // The server is still there.
  EXPECT_EQ(h.post("/v1/completions", completion_body()).status, 200);
}

TEST(ServeHttp, FullQueueIs503) {
  FakeBackendOptions o;
  o.max_batch = 1;
  o.queue_capacity = 0;
  o.step_interval = 20ms;
  Harness h(o);
  // One long request holds the only slot.
  std::thread holder([&] {
    EXPECT_EQ(h.post("/v1/completions", completion_body(R"("max_tokens":60)")).status, 200);
  });
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (h.backend.stats().running + h.backend.stats().queued == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(2ms);
  }
  auto r = h.post("/v1/completions", completion_body());
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "queue_full");
  holder.join();
}

TEST(ServeHttp, HundredConcurrentClientsAgainstASmallQueue) {
  FakeBackendOptions o;
  o.max_batch = 2;
  o.queue_capacity = 4;
  o.step_interval = 2ms;
  ServerConfig c;
  c.http_threads = 32;
  Harness h(o, c);
  std::atomic<int> ok{0}, busy{0}, other{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 100; ++i) {
    clients.emplace_back([&, i] {
      bool s = i % 2 == 0;
      auto r = h.post(
          "/v1/completions",
          completion_body(std::string(R"("max_tokens":20,"stream":)") + (s ? "true" : "false")));
      if (r.status == 200) {
        ++ok;
      } else if (r.status == 503) {
        ++busy;
      } else {
        ++other;
        ADD_FAILURE() << (s ? "stream" : "whole") << " status " << r.status << " "
                      << httplib::to_string(r.error) << " " << r.body;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok + busy, 100);
  EXPECT_EQ(other, 0);
  EXPECT_GE(ok, 6);  // at least the first batch and queue got through
  EXPECT_EQ(h.get("/health").status, 200);
  EXPECT_TRUE(h.backend.wait_idle(10s));
}

TEST(ServeHttp, ClientDisconnectMidStreamFreesTheSlot) {
  FakeBackendOptions o;
  o.max_batch = 1;
  o.queue_capacity = 0;
  o.step_interval = 10ms;
  Harness h(o);
  auto c = h.client();
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = completion_body(R"("max_tokens":250,"stream":true)");
  req.set_header("Content-Type", "application/json");
  size_t received = 0;
  req.content_receiver = [&](const char*, size_t n, uint64_t, uint64_t) {
    received += n;
    return received < 200;  // hang up after the first few chunks
  };
  auto r = c->send(req);
  EXPECT_EQ(r.error(), httplib::Error::Canceled);
  c->stop();
  // The server notices at its next write and cancels: the slot frees long before 250 tokens.
  EXPECT_TRUE(h.backend.wait_idle(10s));
  EXPECT_EQ(h.backend.cancelled(), 1);
  EXPECT_EQ(h.post("/v1/completions", completion_body()).status, 200);
}

// A whole (non-streamed) response writes nothing until the end: a client that gives up is seen
// by looking at its connection, and its request is cancelled long before its 250 tokens.
TEST(ServeHttp, ClientLeavingAWholeResponseFreesTheSlot) {
  FakeBackendOptions o;
  o.max_batch = 1;
  o.queue_capacity = 0;
  o.step_interval = 10ms;
  Harness h(o);
  auto c = h.client();
  c->set_read_timeout(0, 300000);  // gives up after 0.3 s of a 2.5 s generation
  const auto start = std::chrono::steady_clock::now();
  auto r = c->Post("/v1/completions", completion_body(R"("max_tokens":250)"), "application/json");
  EXPECT_FALSE(r) << "the client was meant to time out";
  c.reset();  // closes the connection, if the failed request left it open
  EXPECT_TRUE(h.backend.wait_idle(10s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
  EXPECT_EQ(h.backend.cancelled(), 1);
  EXPECT_EQ(h.post("/v1/completions", completion_body()).status, 200);
}

TEST(ServeHttp, BearerToken) {
  ServerConfig c;
  c.api_key = "s3cret-key";
  Harness h({}, c);
  auto none = h.post("/v1/completions", completion_body());
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.json()["error"]["type"], "authentication_error");
  EXPECT_EQ(
      h.post("/v1/completions", completion_body(), {{"Authorization", "Bearer wrong"}}).status,
      401);
  EXPECT_EQ(
      h.post("/v1/completions", completion_body(), {{"Authorization", "Bearer s3cret-ke"}}).status,
      401);
  EXPECT_EQ(h.post("/v1/completions", completion_body(), {{"Authorization", "s3cret-key"}}).status,
            401);
  EXPECT_EQ(h.get("/v1/models").status, 401);
  EXPECT_EQ(
      h.post("/v1/completions", completion_body(), {{"Authorization", "Bearer s3cret-key"}}).status,
      200);
  EXPECT_EQ(h.get("/v1/models", {{"Authorization", "Bearer s3cret-key"}}).status, 200);
  EXPECT_EQ(h.get("/health").status, 200);
  EXPECT_TRUE(h.backend.requests().size() == 1);
}

TEST(ServeHttp, Metrics) {
  Harness h;
  ASSERT_EQ(h.post("/v1/completions", completion_body(R"("max_tokens":4)")).status, 200);
  ASSERT_EQ(h.post("/v1/completions", "{").status, 400);
  ASSERT_TRUE(h.backend.wait_idle(10s));
  auto m = h.get("/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_NE(
      m.body.find("fabtrain_serve_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 1"),
      std::string::npos)
      << m.body;
  EXPECT_NE(
      m.body.find("fabtrain_serve_requests_total{endpoint=\"/v1/completions\",status=\"400\"} 1"),
      std::string::npos);
  EXPECT_NE(m.body.find("fabtrain_serve_prompt_tokens_total 3\n"), std::string::npos);
  EXPECT_NE(m.body.find("fabtrain_serve_generated_tokens_total 4\n"), std::string::npos);
  EXPECT_NE(m.body.find("fabtrain_serve_queue_depth 0\n"), std::string::npos);
  EXPECT_NE(m.body.find("fabtrain_serve_running 0\n"), std::string::npos);
  EXPECT_NE(m.body.find("fabtrain_serve_generated_tokens_per_second "), std::string::npos);
}

// A raw connection to the server; receive waits at most 20 s.
int connect_raw(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{20, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// Everything the server sends until it closes the connection (or the 20 s receive timeout).
std::string read_until_closed(int fd, bool* closed) {
  std::string got;
  char buf[4096];
  while (true) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      got.append(buf, static_cast<size_t>(n));
      continue;
    }
    *closed = n == 0;
    return got;
  }
}

TEST(ServeHttp, SlowClientsTimeOut) {
  ServerConfig c;
  c.read_timeout_s = 1;
  c.keep_alive_timeout_s = 1;
  Harness h({}, c);
  // Headers that never end, a body shorter than its Content-Length, and a silent connection:
  // each is answered or closed after the read timeout, never left holding a thread.
  const std::string stalls[] = {
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: appl",
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"model\"",
      "",
  };
  for (const auto& stall : stalls) {
    int fd = connect_raw(h.server->port());
    ASSERT_GE(fd, 0);
    ASSERT_EQ(send(fd, stall.data(), stall.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(stall.size()));
    auto start = std::chrono::steady_clock::now();
    bool closed = false;
    std::string got = read_until_closed(fd, &closed);
    close(fd);
    EXPECT_TRUE(closed) << stall << " -> " << got;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 15s) << stall;
    if (!got.empty()) {
      EXPECT_EQ(got.rfind("HTTP/1.1 400", 0), 0u) << got;  // a timed-out read is a bad request
    }
  }
  EXPECT_EQ(h.post("/v1/completions", completion_body()).status, 200);
  EXPECT_TRUE(h.backend.requests().size() == 1);
}

TEST(ServeHttp, StopsWhileAStreamRuns) {
  FakeBackendOptions o;
  o.step_interval = 50ms;
  auto h = std::make_unique<Harness>(o);
  std::thread client([&] {
    auto r = h->post("/v1/completions", completion_body(R"("max_tokens":200,"stream":true)"));
    (void)r;  // ends one way or another: the server is going away
  });
  std::this_thread::sleep_for(200ms);
  auto start = std::chrono::steady_clock::now();
  h->server->stop();
  h->server->wait();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
  client.join();
}

}  // namespace
}  // namespace fabkit::serve::fake
