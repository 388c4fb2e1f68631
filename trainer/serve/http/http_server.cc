#include "trainer/serve/http/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <stdexcept>
#include <thread>

#include "trainer/serve/http/api_error.h"
#include "trainer/serve/http/api_key.h"
#include "trainer/serve/http/api_request.h"
#include "trainer/serve/http/api_response.h"
#include "trainer/serve/http/connection_watch.h"
#include "trainer/serve/http/generation_stream.h"
#include "trainer/serve/http/prompt_tokens.h"
#include "trainer/serve/http/serve_metrics.h"

namespace fabkit::serve {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kJson = "application/json";

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status();
  res.set_content(e.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  kJson);
}

// The endpoint label of /metrics: known paths as they are, anything else one label, so a client
// probing random paths cannot grow the metric without bound.
std::string endpoint_label(const std::string& path) {
  for (const char* known :
       {"/v1/models", "/v1/completions", "/v1/chat/completions", "/health", "/metrics"}) {
    if (path == known) return path;
  }
  return "other";
}

// httplib 0.11 listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, compiled into Debian's
// shared library): a burst of clients overflows it, and connections the kernel then answers with
// SYN cookies fail (measured: 27 to 64 of 100 simultaneous clients got no response, in four runs).
// listen() again on the bound socket raises the backlog.
class BacklogServer : public httplib::Server {
 public:
  bool raise_backlog(int backlog) { return ::listen(svr_sock_, backlog) == 0; }
};

}  // namespace

struct HttpServer::Impl {
  ServerConfig config;
  GenerationBackend& backend;
  ServedModel model;
  ServeMetrics metrics;
  BacklogServer http;
  int port = 0;
  std::thread listener;
  std::atomic<bool> listen_returned{false};
  // Set by stop(): streams and waits end within a keep-alive interval, so the connection threads
  // (which httplib joins on stop) are free.
  std::atomic<bool> stopping{false};

  Impl(ServerConfig c, GenerationBackend& b, ServedModel m)
      : config(std::move(c)), backend(b), model(std::move(m)) {}

  void check_auth(const httplib::Request& req) const {
    if (config.api_key.empty()) return;
    if (!bearer_matches(req.get_header_value("Authorization"), config.api_key)) {
      throw ApiError(401, "missing or wrong API key: send the header 'Authorization: Bearer <key>'",
                     "authentication_error", "", "invalid_api_key");
    }
  }

  // Wraps a handler: authentication first, and every ApiError (or anything else thrown) becomes
  // OpenAI's error shape rather than httplib's 500 page.
  httplib::Server::Handler guarded(void (Impl::*handler)(const httplib::Request&,
                                                         httplib::Response&)) {
    return [this, handler](const httplib::Request& req, httplib::Response& res) {
      try {
        if (authenticated_path(req.path)) check_auth(req);
        (this->*handler)(req, res);
      } catch (const ApiError& e) {
        send_error(res, e);
      } catch (const std::exception& e) {
        send_error(res, ApiError(500, std::string("internal error: ") + e.what(), "server_error"));
      }
    };
  }

  void models(const httplib::Request&, httplib::Response& res) {
    nlohmann::json card = {{"id", model.name},
                           {"object", "model"},
                           {"created", static_cast<int64_t>(std::time(nullptr))},
                           {"owned_by", "fabtrain"},
                           {"max_model_len", backend.context_length()}};
    res.set_content(nlohmann::json{{"object", "list"}, {"data", {card}}}.dump(), kJson);
  }

  void health(const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"status\":\"ok\"}", kJson);
  }

  void metrics_page(const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.render(backend.stats()), "text/plain; version=0.0.4");
  }

  void completions(const httplib::Request& req, httplib::Response& res) {
    generate(req, parse_completion_request(req.body), res);
  }
  void chat_completions(const httplib::Request& req, httplib::Response& res) {
    generate(req, parse_chat_request(req.body), res);
  }

  void generate(const httplib::Request& http_request, const ApiRequest& request,
                httplib::Response& res) {
    if (request.model != model.name) {
      throw ApiError(404,
                     "the model '" + request.model + "' does not exist; this server serves '" +
                         model.name + "'",
                     "invalid_request_error", "model", "model_not_found");
    }
    GenerationRequest g;
    g.prompt = prompt_token_ids(request, model, backend.vocab_size());
    g.max_tokens = resolve_max_tokens(request, static_cast<int64_t>(g.prompt.size()),
                                      backend.context_length());
    g.sampling = request.sampling;
    g.stop_token_ids = model.stop_token_ids;
    Usage usage;
    usage.prompt_tokens = static_cast<int64_t>(g.prompt.size());
    auto stream = GenerationStream::start(backend, std::move(g), *model.tokenizer, request.stop);
    metrics.count_prompt_tokens(usage.prompt_tokens);
    ResponseHeader header{request.chat, new_response_id(request.chat),
                          static_cast<int64_t>(std::time(nullptr)), model.name};
    if (request.stream) {
      stream_response(request, header, usage, stream, res);
    } else {
      whole_response(http_request, header, usage, *stream, res);
    }
  }

  void whole_response(const httplib::Request& http_request, const ResponseHeader& header,
                      Usage usage, GenerationStream& stream, httplib::Response& res) {
    const auto deadline = Clock::now() + std::chrono::seconds(config.generation_timeout_s);
    // Nothing is written until the end, so a client that leaves is seen only by looking at its
    // connection (connection_watch.h), at most every kPeerCheck.
    constexpr auto kPeerCheck = std::chrono::milliseconds(100);
    const auto connection = ConnectionWatch::find(
        http_request.remote_addr, http_request.remote_port, http_request.local_port);
    auto next_check = Clock::now() + kPeerCheck;
    std::string text;
    TextStep step;
    while (true) {
      if (stopping) throw shutting_down(stream);
      const auto now = Clock::now();
      if (connection && now >= next_check) {
        next_check = now + kPeerCheck;
        if (connection->peer_closed()) {
          stream.cancel();
          // No one reads this; the status is what /metrics counts.
          throw ApiError(499, "the client closed the connection; the request was cancelled",
                         "invalid_request_error", "", "client_closed");
        }
      }
      if (now >= deadline) {
        stream.cancel();
        throw ApiError(504,
                       "generation did not finish within " +
                           std::to_string(config.generation_timeout_s) + " s; it was cancelled",
                       "server_error", "", "timeout");
      }
      if (!stream.next(
              std::min({deadline, now + std::chrono::milliseconds(config.stream_keepalive_ms),
                        connection ? next_check : deadline}),
              step)) {
        continue;
      }
      metrics.count_generated_tokens(step.new_tokens);
      text += step.text;
      if (step.finished) break;
    }
    if (!step.error.empty()) throw ApiError(500, step.error, "server_error");
    usage.completion_tokens = stream.completion_tokens();
    res.set_content(full_response(header, text, step.finish_reason, usage)
                        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                    kJson);
  }

  // Server-sent events. The provider runs the whole stream in one call on the connection's
  // thread; a failed write means the client went away, and cancels the backend request.
  void stream_response(const ApiRequest& request, const ResponseHeader& header, Usage usage,
                       std::shared_ptr<GenerationStream> stream, httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");  // proxies must pass chunks on at once
    const bool include_usage = request.include_usage;
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, header, usage, include_usage, stream](size_t, httplib::DataSink& sink) mutable {
          auto write = [&sink](const std::string& s) { return sink.write(s.data(), s.size()); };
          const auto deadline = Clock::now() + std::chrono::seconds(config.generation_timeout_s);
          const auto keepalive = std::chrono::milliseconds(config.stream_keepalive_ms);
          bool first = true;
          TextStep step;
          while (true) {
            auto now = Clock::now();
            if (stopping) {
              write(sse_event(shutting_down(*stream).to_json()));
              write(kSseDone);
              sink.done();
              return true;
            }
            if (now >= deadline) {
              stream->cancel();
              ApiError e(504,
                         "generation did not finish within " +
                             std::to_string(config.generation_timeout_s) + " s; cancelled",
                         "server_error", "", "timeout");
              write(sse_event(e.to_json()));
              write(kSseDone);
              sink.done();
              return true;
            }
            if (!stream->next(std::min(deadline, now + keepalive), step)) {
              // An SSE comment: clients ignore it; writing it shows whether the client is there.
              if (!write(": keep-alive\n\n")) return cancelled(*stream);
              continue;
            }
            metrics.count_generated_tokens(step.new_tokens);
            if (!step.error.empty()) {
              write(sse_event(ApiError(500, step.error, "server_error").to_json()));
              write(kSseDone);
              sink.done();
              return true;
            }
            if (first || !step.text.empty()) {
              if (!write(sse_event(
                      stream_chunk(header, step.text, first, std::nullopt, include_usage)))) {
                return cancelled(*stream);
              }
              first = false;
            }
            if (step.finished) break;
          }
          if (!write(
                  sse_event(stream_chunk(header, "", false, step.finish_reason, include_usage)))) {
            return cancelled(*stream);
          }
          if (include_usage) {
            usage.completion_tokens = stream->completion_tokens();
            write(sse_event(usage_chunk(header, usage)));
          }
          write(kSseDone);
          sink.done();
          return true;
        },
        // Runs when the response is done with, however it ended.
        [stream](bool) { stream->cancel(); });
  }

  static ApiError shutting_down(GenerationStream& stream) {
    stream.cancel();
    return ApiError(503, "the server is shutting down; the request was cancelled", "server_error",
                    "", "shutting_down");
  }

  static bool cancelled(GenerationStream& stream) {
    stream.cancel();
    return false;  // httplib closes the connection
  }

  // The paths that need the API key: the API itself. Health and metrics stay open, as for
  // vLLM: load balancers and Prometheus scrape them without the key, and they reveal nothing of
  // the prompts.
  static bool authenticated_path(const std::string& path) { return path.rfind("/v1/", 0) == 0; }

  void install_routes() {
    http.Get("/v1/models", guarded(&Impl::models));
    http.Post("/v1/completions", guarded(&Impl::completions));
    http.Post("/v1/chat/completions", guarded(&Impl::chat_completions));
    http.Get("/health", guarded(&Impl::health));
    http.Get("/metrics", guarded(&Impl::metrics_page));

    // Statuses httplib sets itself (404 no route, 413 body too large, 400 unparsable request)
    // come with an empty body: give them OpenAI's shape.
    httplib::Server::HandlerWithResponse openai_errors = [](const httplib::Request& req,
                                                            httplib::Response& res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
      if (res.status == 404) {
        send_error(res, ApiError(404,
                                 "no route " + req.method + " " + req.path +
                                     "; the API is under /v1 (GET /v1/models)",
                                 "invalid_request_error", "", "not_found"));
      } else if (res.status == 413) {
        send_error(res, ApiError(413,
                                 "the request body is larger than the server's limit "
                                 "(--max-body-bytes)",
                                 "invalid_request_error", "", "body_too_large"));
      } else {
        send_error(res, ApiError(res.status,
                                 "the server could not take this HTTP request (status " +
                                     std::to_string(res.status) + ")",
                                 "invalid_request_error"));
      }
      return httplib::Server::HandlerResponse::Handled;
    };
    http.set_error_handler(openai_errors);
    // A body announced larger than the limit, or sent without the API key, is refused before
    // the client sends it (curl sends "Expect: 100-continue" for large bodies), so neither a
    // 10 MB upload nor an unauthenticated one costs the server the body. The connection is closed
    // after the answer: curl goes on sending the body after a 401 (for authentication schemes
    // that retry on the same connection), which the closed connection cuts short.
    http.set_expect_100_continue_handler(
        [this](const httplib::Request& req, httplib::Response& res) {
          int status = 100;
          if (authenticated_path(req.path)) {
            try {
              check_auth(req);
            } catch (const ApiError& e) {
              send_error(res, e);
              status = e.status();
            }
          }
          if (status == 100 &&
              req.get_header_value<uint64_t>("Content-Length") > config.max_body_bytes) {
            res.status = status = 413;
          }
          if (status != 100) {
            res.set_header("Connection", "close");
            // httplib 0.11 sends a response from this hook without its length: the client would
            // read until the connection closes, which it keeps open while it uploads.
            res.set_header("Content-Length", std::to_string(res.body.size()));
          }
          return status;
        });
    // Counted just before the response is written (httplib's post-routing hook), so a client that
    // reads /metrics after a response already sees it counted.
    http.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      metrics.count_request(endpoint_label(req.path), res.status);
    });
  }

  void configure() {
    http.set_payload_max_length(config.max_body_bytes);
    http.set_read_timeout(config.read_timeout_s, 0);
    http.set_write_timeout(config.write_timeout_s, 0);
    http.set_keep_alive_timeout(config.keep_alive_timeout_s);
    const int threads = config.http_threads;
    http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  }
};

HttpServer::HttpServer(ServerConfig config, GenerationBackend& backend, ServedModel model)
    : impl_(std::make_unique<Impl>(std::move(config), backend, std::move(model))) {
  if (impl_->model.tokenizer == nullptr) throw std::invalid_argument("HttpServer: no tokenizer");
  impl_->configure();
  impl_->install_routes();
  const ServerConfig& c = impl_->config;
  if (c.port == 0) {
    impl_->port = impl_->http.bind_to_any_port(c.host);
  } else if (impl_->http.bind_to_port(c.host, c.port)) {
    impl_->port = c.port;
  } else {
    impl_->port = -1;
  }
  if (impl_->port > 0 && !impl_->http.raise_backlog(c.listen_backlog)) impl_->port = -1;
  if (impl_->port <= 0) {
    throw std::runtime_error("cannot listen on " + c.host + ":" + std::to_string(c.port) +
                             " (address in use, or not an address of this host); choose another "
                             "--host/--port");
  }
  impl_->listener = std::thread([this] {
    impl_->http.listen_after_bind();
    impl_->listen_returned = true;
  });
}

HttpServer::~HttpServer() {
  stop();
  wait();
}

int HttpServer::port() const { return impl_->port; }

bool HttpServer::running() const { return !impl_->listen_returned; }

void HttpServer::stop() {
  // Once: httplib's stop() asserts the listening socket is still open.
  if (impl_->stopping.exchange(true)) return;
  // httplib's stop() does nothing until listen has started on the listener thread: wait for
  // that (a few microseconds after the constructor) or for listen to have returned.
  while (!impl_->listen_returned) {
    if (impl_->http.is_running()) {
      impl_->http.stop();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void HttpServer::wait() {
  if (impl_->listener.joinable()) impl_->listener.join();
}

}  // namespace fabkit::serve
