// `fabtrain chat` against a cpp-httplib server on 127.0.0.1 that answers as an OpenAI-compatible
// server does (streamed chunks split at odd places, a whole reply, OpenAI's error shape) and as
// one must not (a stream cut before [DONE], a reply that never comes, no server at all).
#include "trainer/serve/client/chat_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/errors.h"
#include "common/json.h"
#include "tests/support/ttar.h"

namespace fabkit::serve {
namespace {

namespace fs = std::filesystem;

// A chunk of OpenAI's chat.completion.chunk shape carrying `content`.
std::string chunk(const std::string& content) {
  const Json j = {{"id", "chatcmpl-1"},
                  {"object", "chat.completion.chunk"},
                  {"model", "tiny"},
                  {"choices", {{{"index", 0}, {"delta", {{"content", content}}}, {"finish_reason", nullptr}}}}};
  return "data: " + j.dump() + "\n\n";
}

class FakeServer {
 public:
  FakeServer() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    server_.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
      remember(req);
      res.set_content(R"({"object":"list","data":[{"id":"tiny","object":"model"}]})",
                      "application/json");
    });
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // httplib's stop() does nothing before the accept loop runs, which would then run forever and
    // hang the destructor's join: return only once it runs.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!server_.is_running() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeServer() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      released_ = true;
    }
    cv_.notify_all();
    server_.stop();
    thread_.join();
  }
  httplib::Server& server() { return server_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  void remember(const httplib::Request& req) {
    std::lock_guard<std::mutex> lock(mutex_);
    bodies_.push_back(req.body);
    auth_.push_back(req.get_header_value("Authorization"));
  }
  std::vector<std::string> bodies() {
    std::lock_guard<std::mutex> lock(mutex_);
    return bodies_;
  }
  std::vector<std::string> auth() {
    std::lock_guard<std::mutex> lock(mutex_);
    return auth_;
  }
  // Holds a handler until the test ends (a server that never answers), at most `limit`.
  void hang(std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait_for(lock, limit, [this] { return released_; });
  }

 private:
  httplib::Server server_;
  int port_ = -1;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool released_ = false;
  std::vector<std::string> bodies_, auth_;
};

struct Ran {
  int code = -1;
  std::string out, err;
};

Ran chat(ChatArgs args) {
  std::ostringstream out, err;
  Ran r;
  r.code = run_chat(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

ChatArgs args_for(const FakeServer& s, bool stream) {
  ChatArgs a;
  a.url = s.url();
  a.message = "Say hi";
  a.stream = stream;
  a.timeout_s = 5;
  return a;
}

TEST(ChatClient, AStreamedReplyIsPrintedWholeHoweverTheServerSplitsItsChunks) {
  FakeServer s;
  // The events cut at odd places (inside "data:", inside the JSON, between \r and \n) and a
  // usage chunk after the last content chunk, as stream_options.include_usage asks for.
  std::string stream = ": hello\r\n\r\n" + chunk("Hel") + chunk("lo, ") + chunk("wörld") +
                       R"(data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})" +
                       "\r\n\r\n" +
                       R"(data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3}})" +
                       "\n\ndata: [DONE]\n\n";
  s.server().Post("/v1/chat/completions", [&](const httplib::Request& req,
                                              httplib::Response& res) {
    s.remember(req);
    res.set_chunked_content_provider("text/event-stream", [stream](size_t, httplib::DataSink& sink) {
      for (size_t i = 0; i < stream.size(); i += 5) sink.write(stream.data() + i, std::min<size_t>(5, stream.size() - i));
      sink.done();
      return true;
    });
  });
  ChatArgs a = args_for(s, true);
  a.system = "Be brief.";
  a.max_tokens = 12;
  a.temperature = 0.0;
  a.seed = 7;
  a.usage = true;
  const Ran r = chat(a);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "Hello, wörld\n");
  EXPECT_NE(r.err.find("prompt_tokens 5, completion_tokens 3"), std::string::npos) << r.err;
  // The model came from GET /v1/models; the request carries what the flags said.
  const std::vector<std::string> bodies = s.bodies();
  ASSERT_EQ(bodies.size(), 2u);
  const Json sent = Json::parse(bodies[1]);
  EXPECT_EQ(sent["model"], "tiny");
  EXPECT_EQ(sent["stream"], true);
  EXPECT_EQ(sent["stream_options"]["include_usage"], true);
  EXPECT_EQ(sent["max_tokens"], 12);
  EXPECT_EQ(sent["temperature"], 0.0);
  EXPECT_EQ(sent["seed"], 7);
  ASSERT_EQ(sent["messages"].size(), 2u);
  EXPECT_EQ(sent["messages"][0]["role"], "system");
  EXPECT_EQ(sent["messages"][1]["content"], "Say hi");
}

TEST(ChatClient, AWholeReplyIsPrintedAndACutReplySaysSo) {
  FakeServer s;
  s.server().Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
    s.remember(req);
    res.set_content(
        R"({"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi there"},"finish_reason":"length"}],"usage":{"prompt_tokens":4,"completion_tokens":2}})",
        "application/json");
  });
  ChatArgs a = args_for(s, false);
  a.model = "named";  // no GET /v1/models when the model is given
  const Ran r = chat(a);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "Hi there\n");
  EXPECT_NE(r.err.find("cut at max_tokens"), std::string::npos) << r.err;
  ASSERT_EQ(s.bodies().size(), 1u);
  EXPECT_EQ(Json::parse(s.bodies()[0])["model"], "named");
  EXPECT_EQ(Json::parse(s.bodies()[0])["stream"], false);
}

TEST(ChatClient, TheServersErrorIsPrintedWithItsStatusAndExitsOne) {
  FakeServer s;
  s.server().Post("/v1/chat/completions", [](const httplib::Request&, httplib::Response& res) {
    res.status = 503;
    res.set_content(
        R"j({"error":{"message":"the queue is full (64 waiting)","type":"server_error","param":null,"code":"queue_full"}})j",
        "application/json");
  });
  for (bool stream : {true, false}) {
    const Ran r = chat(args_for(s, stream));
    EXPECT_EQ(r.code, 1) << "stream " << stream;
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("HTTP 503: the queue is full (64 waiting) (server_error)"), std::string::npos)
        << r.err;
  }
}

TEST(ChatClient, TheApiKeyGoesAsABearerTokenAndARefusalExitsOne) {
  FakeServer s;
  s.server().Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
    s.remember(req);
    res.status = 401;
    res.set_content(R"({"error":{"message":"Invalid API key","type":"invalid_request_error"}})",
                    "application/json");
  });
  fabkit::testing::TempDir dir("chat-key");
  std::ofstream(dir.path() / "key") << "sk-test-123\n";
  ChatArgs a = args_for(s, false);
  a.model = "tiny";
  a.api_key_file = (dir.path() / "key").string();
  // A key other users can read is refused before anything is sent, as the server refuses it.
  fs::permissions(dir.path() / "key", fs::perms::owner_read | fs::perms::others_read);
  Ran refused = chat(a);
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("chmod 600"), std::string::npos) << refused.err;
  EXPECT_TRUE(s.auth().empty());
  fs::permissions(dir.path() / "key", fs::perms::owner_read | fs::perms::owner_write);
  const Ran r = chat(a);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("HTTP 401: Invalid API key"), std::string::npos) << r.err;
  ASSERT_EQ(s.auth().size(), 1u);
  EXPECT_EQ(s.auth()[0], "Bearer sk-test-123");
}

TEST(ChatClient, AStreamThatEndsBeforeDoneOrIsNotJsonExitsThree) {
  FakeServer s;
  s.server().Post("/v1/chat/completions", [](const httplib::Request& req, httplib::Response& res) {
    const bool garbage = req.body.find("garbage") != std::string::npos;
    res.set_content(garbage ? "data: <html>oops</html>\n\n" : chunk("partial"), "text/event-stream");
  });
  ChatArgs a = args_for(s, true);
  a.model = "tiny";
  Ran r = chat(a);
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.out, "partial");
  EXPECT_NE(r.err.find("ended before `data: [DONE]`"), std::string::npos) << r.err;
  a.message = "garbage";
  r = chat(a);
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("not JSON: <html>oops</html>"), std::string::npos) << r.err;
}

TEST(ChatClient, AServerThatNeverAnswersTimesOut) {
  FakeServer s;
  s.server().Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response&) {
    s.hang(std::chrono::seconds(30));
  });
  ChatArgs a = args_for(s, true);
  a.model = "tiny";
  a.timeout_s = 1;
  const auto t0 = std::chrono::steady_clock::now();
  const Ran r = chat(a);
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_LT(took_s, 20.0);  // the 1 s read timeout, not the server's 30 s hold
  EXPECT_NE(r.err.find("POST /v1/chat/completions"), std::string::npos) << r.err;
}

TEST(ChatClient, NoServerListeningExitsThree) {
  int port;
  {
    FakeServer gone;  // a port that was just free and is closed again
    port = gone.port();
  }
  ChatArgs a;
  a.url = "http://127.0.0.1:" + std::to_string(port);
  a.message = "hi";
  a.timeout_s = 2;
  const Ran r = chat(a);
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("GET /v1/models"), std::string::npos) << r.err;
}

TEST(ChatClient, BadArgumentsExitTwoNamingTheValue) {
  ChatArgs a;
  a.message = "hi";
  a.url = "https://example.invalid";
  Ran r = chat(a);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("https is not supported"), std::string::npos) << r.err;
  a.url = "http://127.0.0.1:8000";
  a.api_key_file = "/nonexistent/key";
  r = chat(a);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("/nonexistent/key"), std::string::npos) << r.err;
  a.api_key_file.clear();
  a.message.clear();
  r = chat(a);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--message"), std::string::npos) << r.err;
}

TEST(ServerUrl, HostPortAndPrefixAreReadAndBadOnesNamed) {
  ServerUrl u = parse_server_url("http://127.0.0.1:8000");
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, 8000);
  EXPECT_EQ(u.prefix, "");
  u = parse_server_url("http://localhost/v1/");
  EXPECT_EQ(u.host, "localhost");
  EXPECT_EQ(u.port, 80);
  EXPECT_EQ(u.prefix, "");  // an OpenAI base URL ending in /v1 is the same server
  u = parse_server_url("http://[::1]:9000/api");
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.port, 9000);
  EXPECT_EQ(u.prefix, "/api");
  for (const char* bad : {"127.0.0.1:8000", "http://", "http://:80", "http://h:0", "http://h:99999",
                          "http://h:8x", "http://h:", "http://h/?q=1", "http://[::1"}) {
    EXPECT_THROW(parse_server_url(bad), UsageError) << bad;
  }
}

TEST(ChatRequestBody, InvalidUtf8InTheMessageIsReplacedNotFatal) {
  ChatArgs a;
  a.message = "caf\xe9";
  const Json j = Json::parse(chat_request_body(a, "m"));
  EXPECT_EQ(j["messages"][0]["content"], "caf\xef\xbf\xbd");
  EXPECT_FALSE(j.contains("max_tokens"));
}

}  // namespace
}  // namespace fabkit::serve
