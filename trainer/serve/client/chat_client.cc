#include "trainer/serve/client/chat_client.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "common/errors.h"
#include "common/json.h"
#include "common/json_read.h"
#include "common/utf8_text.h"
#include "trainer/serve/client/sse_reader.h"
#include "trainer/serve/http/api_key.h"

namespace fabkit::serve {
namespace {

// A reply that is not what an OpenAI-compatible server sends (exit 3), as opposed to an error the
// server chose to answer with (exit 1).
class BadReply : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// The server answered with an error status (exit 1).
class ServerRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "HTTP 401: Invalid API key (invalid_request_error)" from an OpenAI error body, or the body's
// first bytes when it is not one.
std::string server_error(int status, const std::string& body) {
  std::string what = "HTTP " + std::to_string(status);
  try {
    const Json j = parse_json(body, "the error reply");
    const Json& e = j.at("error");
    what += ": " + e.at("message").get<std::string>();
    if (e.contains("type") && e["type"].is_string())
      what += " (" + e["type"].get<std::string>() + ")";
    return what;
  } catch (const std::exception&) {
    return what + ": " + utf8_clean(body.substr(0, 200));
  }
}

httplib::Headers request_headers(const std::string& key) {
  httplib::Headers h = {{"Accept", "application/json, text/event-stream"}};
  if (!key.empty()) h.emplace("Authorization", "Bearer " + key);
  return h;
}

std::string first_model(httplib::Client& cli, const ServerUrl& u, const std::string& key) {
  httplib::Result r = cli.Get(u.prefix + "/v1/models", request_headers(key));
  if (!r) throw BadReply("GET /v1/models: " + httplib::to_string(r.error()));
  if (r->status != 200) throw ServerRefused("GET /v1/models: " + server_error(r->status, r->body));
  try {
    const Json j = parse_json(r->body, "GET /v1/models");
    const Json& data = j.at("data");
    if (!data.is_array() || data.empty()) throw BadReply("GET /v1/models: the server lists no model");
    return data.at(0).at("id").get<std::string>();
  } catch (const JsonReadError& e) {
    throw BadReply(std::string("GET /v1/models: not an OpenAI model list (") + e.detail() + ")");
  } catch (const Json::exception& e) {
    throw BadReply(std::string("GET /v1/models: not an OpenAI model list (") + e.what() + ")");
  }
}

void print_usage(const Json& usage, std::ostream& err) {
  if (!usage.is_object()) return;
  err << "usage: prompt_tokens " << usage.value("prompt_tokens", 0) << ", completion_tokens "
      << usage.value("completion_tokens", 0) << "\n";
}

// One streamed chunk: its delta's content to `out`; usage and finish_reason remembered.
void take_chunk(const std::string& data, std::ostream& out, Json& usage, std::string& finish) {
  Json j;
  try {
    j = parse_json(data, "a streamed event");
  } catch (const JsonReadError&) {
    throw BadReply("a streamed event is not JSON: " + utf8_clean(data.substr(0, 200)));
  }
  if (j.contains("error")) throw BadReply("the server failed mid-stream: " + j["error"].dump());
  if (j.contains("usage") && j["usage"].is_object()) usage = j["usage"];
  if (!j.contains("choices") || !j["choices"].is_array())
    throw BadReply("a streamed event has no choices: " + utf8_clean(data.substr(0, 200)));
  for (const Json& c : j["choices"]) {
    const Json* delta = c.contains("delta") && c["delta"].is_object() ? &c["delta"] : nullptr;
    if (delta && delta->contains("content") && (*delta)["content"].is_string())
      out << (*delta)["content"].get<std::string>() << std::flush;
    if (c.contains("finish_reason") && c["finish_reason"].is_string())
      finish = c["finish_reason"].get<std::string>();
  }
}

int stream_reply(httplib::Client& cli, const ServerUrl& u, const std::string& key,
                 const std::string& body, const ChatArgs& args, std::ostream& out,
                 std::ostream& err) {
  httplib::Request req;
  req.method = "POST";
  req.path = u.prefix + "/v1/chat/completions";
  req.headers = request_headers(key);
  req.headers.emplace("Content-Type", "application/json");
  req.body = body;
  int status = 0;
  std::string error_body;  // a non-200 answer's body, kept whole (it is one small JSON)
  SseReader reader;
  Json usage;
  std::string finish;
  bool done = false;
  std::string failure;
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    if (status != 200) {
      constexpr size_t kKept = 65536;
      if (error_body.size() < kKept) error_body.append(data, std::min(len, kKept - error_body.size()));
      return true;
    }
    try {
      reader.feed(std::string_view(data, len), [&](const SseEvent& e) {
        if (done) return;
        if (e.data == "[DONE]") {
          done = true;
          return;
        }
        take_chunk(e.data, out, usage, finish);
      });
    } catch (const std::exception& e) {
      failure = e.what();
      return false;  // stop reading: the connection is closed
    }
    return true;
  };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  const bool sent = cli.send(req, res, error);
  if (!failure.empty()) {
    err << "fabtrain chat: " << failure << "\n";
    return 3;
  }
  if (!sent && status == 0) {
    err << "fabtrain chat: POST " << req.path << ": " << httplib::to_string(error) << "\n";
    return 3;
  }
  if (status != 200) {
    err << "fabtrain chat: " << server_error(status, error_body) << "\n";
    return 1;
  }
  if (!done) {
    err << "\nfabtrain chat: the stream ended before `data: [DONE]`"
        << (sent ? "" : std::string(" (") + httplib::to_string(error) + ")") << "\n";
    return 3;
  }
  out << "\n";
  if (finish == "length") err << "fabtrain chat: the reply was cut at max_tokens\n";
  if (args.usage) print_usage(usage, err);
  return 0;
}

int whole_reply(httplib::Client& cli, const ServerUrl& u, const std::string& key,
                const std::string& body, const ChatArgs& args, std::ostream& out,
                std::ostream& err) {
  const std::string path = u.prefix + "/v1/chat/completions";
  httplib::Result r = cli.Post(path, request_headers(key), body, "application/json");
  if (!r) {
    err << "fabtrain chat: POST " << path << ": " << httplib::to_string(r.error()) << "\n";
    return 3;
  }
  if (r->status != 200) {
    err << "fabtrain chat: " << server_error(r->status, r->body) << "\n";
    return 1;
  }
  try {
    const Json j = parse_json(r->body, "the reply");
    const Json& choice = j.at("choices").at(0);
    out << choice.at("message").at("content").get<std::string>() << "\n";
    if (choice.value("finish_reason", "") == "length")
      err << "fabtrain chat: the reply was cut at max_tokens\n";
    if (args.usage && j.contains("usage")) print_usage(j["usage"], err);
  } catch (const JsonReadError& e) {
    err << "fabtrain chat: the reply is not an OpenAI chat completion (" << e.detail() << ")\n";
    return 3;
  } catch (const Json::exception& e) {
    err << "fabtrain chat: the reply is not an OpenAI chat completion (" << e.what() << ")\n";
    return 3;
  }
  return 0;
}

}  // namespace

ServerUrl parse_server_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind("https://", 0) == 0)
    throw UsageError("--url " + url +
                     ": https is not supported; fabtrain serve speaks plain HTTP (reach a remote "
                     "one through an SSH tunnel to its 127.0.0.1 port)");
  if (url.rfind(scheme, 0) != 0)
    throw UsageError("--url " + url + ": give an http:// URL, e.g. http://127.0.0.1:8000");
  std::string rest = url.substr(scheme.size());
  if (rest.find_first_of("?#") != std::string::npos)
    throw UsageError("--url " + url + ": a query or fragment has no place in the server's URL");
  ServerUrl u;
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    u.prefix = rest.substr(slash);
    rest.resize(slash);
    while (!u.prefix.empty() && u.prefix.back() == '/') u.prefix.pop_back();
    // The client appends /v1/...: a URL that already ends in it is taken as the server's base.
    if (u.prefix.size() >= 3 && u.prefix.compare(u.prefix.size() - 3, 3, "/v1") == 0)
      u.prefix.resize(u.prefix.size() - 3);
  }
  std::string port;
  if (!rest.empty() && rest[0] == '[') {  // [IPv6]:port
    const size_t close = rest.find(']');
    if (close == std::string::npos) throw UsageError("--url " + url + ": unclosed '[' in the host");
    u.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') throw UsageError("--url " + url + ": expected ':' after ']'");
      port = rest.substr(close + 2);
    }
  } else {
    const size_t colon = rest.rfind(':');
    u.host = rest.substr(0, colon);
    if (colon != std::string::npos) port = rest.substr(colon + 1);
  }
  if (u.host.empty()) throw UsageError("--url " + url + ": no host");
  if (!port.empty() || rest.find(':') != std::string::npos) {
    const bool digits = !port.empty() && port.size() <= 5 &&
                        std::all_of(port.begin(), port.end(),
                                    [](unsigned char c) { return std::isdigit(c) != 0; });
    if (!digits || std::stoi(port) < 1 || std::stoi(port) > 65535)
      throw UsageError("--url " + url + ": the port must be a number from 1 to 65535");
    u.port = std::stoi(port);
  }
  return u;
}

std::string chat_request_body(const ChatArgs& args, const std::string& model) {
  Json messages = Json::array();
  if (!args.system.empty()) messages.push_back({{"role", "system"}, {"content", args.system}});
  messages.push_back({{"role", "user"}, {"content", args.message}});
  Json body = {{"model", model}, {"messages", messages}, {"stream", args.stream}};
  if (args.stream) body["stream_options"] = {{"include_usage", true}};
  if (args.max_tokens) body["max_tokens"] = *args.max_tokens;
  if (args.temperature) body["temperature"] = *args.temperature;
  if (args.seed) body["seed"] = *args.seed;
  // The message is the user's bytes: invalid UTF-8 would make the JSON library throw.
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

int run_chat(const ChatArgs& args, std::ostream& out, std::ostream& err) {
  ServerUrl u;
  std::string key;
  try {
    if (args.message.empty()) throw UsageError("--message is empty: give the text to send");
    if (args.timeout_s < 1) throw UsageError("--timeout-s must be at least 1");
    u = parse_server_url(args.url);
    if (!args.api_key_file.empty()) key = load_api_key(args.api_key_file);
  } catch (const UsageError& e) {
    err << "fabtrain chat: " << e.what() << "\n";
    return 2;
  }
  httplib::Client cli(u.host, u.port);
  cli.set_connection_timeout(args.timeout_s, 0);
  cli.set_read_timeout(args.timeout_s, 0);
  cli.set_write_timeout(args.timeout_s, 0);
  std::string model = args.model;
  try {
    if (model.empty()) model = first_model(cli, u, key);
  } catch (const ServerRefused& e) {
    err << "fabtrain chat: " << e.what() << "\n";
    return 1;
  } catch (const BadReply& e) {
    err << "fabtrain chat: " << e.what() << "\n";
    return 3;
  }
  const std::string body = chat_request_body(args, model);
  return args.stream ? stream_reply(cli, u, key, body, args, out, err)
                     : whole_reply(cli, u, key, body, args, out, err);
}

}  // namespace fabkit::serve
