// fabtrain serve's HTTP server: OpenAI's /v1/models, /v1/completions and /v1/chat/completions
// (whole or streamed as server-sent events), /health and /metrics, over a GenerationBackend.
// cpp-httplib (Debian's libcpp-httplib-dev) does the HTTP; each connection has a thread of its
// pool, which waits on the request's GenerationStream, so the backend's thread never blocks on a
// client.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainer/serve/backend/generation_backend.h"
#include "trainer/serve/jinja/chat_template.h"
#include "trainer/tokenizer/tokenizer.h"

namespace fabkit::serve {

struct ServerConfig {
  std::string host = "127.0.0.1";  // loopback unless asked: the API has no TLS
  int port = 8000;                 // 0: an ephemeral port (HttpServer::port() says which)
  std::string api_key;             // "": no authentication
  uint64_t max_body_bytes = 4u << 20;
  // Each network wait is bounded: a request's headers and body must arrive, and each write to
  // the client complete, within these; an idle keep-alive connection is closed after its timeout.
  int read_timeout_s = 10;
  int write_timeout_s = 10;
  int keep_alive_timeout_s = 5;
  // A request that has not finished after this long is cancelled (the backend is stuck or the
  // request is too long for it); a stream sends an SSE comment after stream_keepalive_ms without
  // tokens, so a client that went away is noticed even while the backend is quiet.
  int generation_timeout_s = 600;
  int stream_keepalive_ms = 1000;
  // Threads serving connections: each open connection holds one (a streaming client for its
  // whole stream), so this bounds concurrent clients; more wait for a free thread.
  int http_threads = 64;
  // Connections the kernel holds for accept(): a burst of clients beyond it loses connections.
  int listen_backlog = 1024;
};

struct ServedModel {
  std::string name;  // what /v1/models lists and requests must name
  const trainer::Tokenizer* tokenizer = nullptr;
  // null: /v1/chat/completions answers 400 naming --chat-template.
  const trainer::serve::ChatTemplate* chat_template = nullptr;
  // The tokenizer's special tokens for the template (bos_token, eos_token, unk_token, ...).
  std::map<std::string, std::string> special_tokens;
  bool add_bos = false;                 // a text prompt of /v1/completions starts with BOS
  std::vector<int64_t> stop_token_ids;  // end a generation (EOS, a chat turn's end token)
};

class HttpServer {
 public:
  // Binds host:port (std::runtime_error naming them when it cannot) and starts serving on a
  // thread of its own.
  HttpServer(ServerConfig config, GenerationBackend& backend, ServedModel model);
  ~HttpServer();  // stops and joins
  int port() const;
  bool running() const;  // false once the listener has ended (after stop(), or on an error)
  void stop();
  // Blocks until stop().
  void wait();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fabkit::serve
