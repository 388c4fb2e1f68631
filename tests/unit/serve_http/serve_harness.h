// An HttpServer on 127.0.0.1 (an ephemeral port) over a FakeBackend, a ByteTokenizer and a ChatML
// template, and httplib clients with bounded timeouts, for the server tests.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/unit/serve_http/fake_backend.h"
#include "trainer/serve/http/http_server.h"
#include "trainer/serve/jinja/chat_template.h"
#include "trainer/tokenizer/tokenizer.h"

namespace fabkit::serve::fake {

inline const char* const kChatMl =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}";

struct Harness {
  explicit Harness(FakeBackendOptions backend_options = {}, ServerConfig config = {})
      : backend(std::move(backend_options)), chat_template(kChatMl) {
    config.host = "127.0.0.1";
    config.port = 0;
    ServedModel model;
    model.name = "tiny";
    model.tokenizer = &tokenizer;
    model.chat_template = &chat_template;
    model.special_tokens = {{"eos_token", "<|im_end|>"}};
    model.stop_token_ids = {trainer::ByteTokenizer::kEos, trainer::ByteTokenizer::kImEnd};
    server = std::make_unique<HttpServer>(config, backend, std::move(model));
  }

  std::unique_ptr<httplib::Client> client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", server->port());
    c->set_connection_timeout(5, 0);
    c->set_read_timeout(30, 0);
    c->set_write_timeout(30, 0);
    return c;
  }

  // POST a JSON body; the response (status -1 and the error when there is none).
  struct Reply {
    int status = -1;
    std::string body;
    httplib::Error error = httplib::Error::Unknown;
    nlohmann::json json() const { return nlohmann::json::parse(body); }
  };
  Reply post(const std::string& path, const std::string& body,
             const httplib::Headers& headers = {}) const {
    auto r = client()->Post(path.c_str(), headers, body, "application/json");
    Reply reply;
    reply.error = r.error();
    if (r) {
      reply.status = r->status;
      reply.body = r->body;
    }
    return reply;
  }
  Reply get(const std::string& path, const httplib::Headers& headers = {}) const {
    auto r = client()->Get(path.c_str(), headers);
    Reply reply;
    reply.error = r.error();
    if (r) {
      reply.status = r->status;
      reply.body = r->body;
    }
    return reply;
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(server->port()); }

  FakeBackend backend;
  trainer::ByteTokenizer tokenizer;
  trainer::serve::ChatTemplate chat_template;
  std::unique_ptr<HttpServer> server;
};

// The data payloads of an SSE body, checking its framing: every event is "data: ...\n\n" or an
// SSE comment (": ..."), nothing else.
inline std::vector<std::string> sse_payloads(const std::string& body, std::string* framing_error) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) {
      *framing_error = "an event without its blank line: " + body.substr(pos);
      return out;
    }
    std::string event = body.substr(pos, end - pos);
    pos = end + 2;
    if (event.rfind(": ", 0) == 0) continue;
    if (event.rfind("data: ", 0) != 0 || event.find('\n') != std::string::npos) {
      *framing_error = "not a single data line: " + event;
      return out;
    }
    out.push_back(event.substr(6));
  }
  return out;
}

}  // namespace fabkit::serve::fake
