// `fabtrain serve`'s options, bound to CLI11 like `fabtrain train`'s (trainer/app), and turned into
// the HTTP server's configuration. The command itself (loading the model into a GenerationBackend)
// is wired in trainer/app once the engine exists; run_server is what it calls.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "trainer/serve/backend/generation_backend.h"
#include "trainer/serve/http/http_server.h"
#include "trainer/serve/jinja/chat_template_files.h"
#include "trainer/tokenizer/tokenizer.h"

namespace fabkit::serve {

struct ServeOptions {
  std::string model_dir;      // an HF model folder or a fabtrain checkpoint (trainer/app)
  std::string tokenizer_dir;  // tokenizer + chat template; "": the model folder's
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string api_key_file;        // "": no authentication
  std::string chat_template_file;  // "": the model folder's template
  int64_t max_batch = 8;           // the engine's decode batch
  int64_t max_queue = 64;          // requests waiting for a slot before 503
  uint64_t max_body_bytes = 4u << 20;
  std::string served_model_name;  // "": the model folder's name
  int read_timeout_s = 10;
  int write_timeout_s = 10;
  int generation_timeout_s = 600;
  int http_threads = 0;  // 0: max_batch + max_queue + 16, so every queued client has a thread
};

void bind_serve_options(CLI::App& command, ServeOptions& options);

// What /v1/models lists: --served-model-name, else the model folder's last component.
std::string served_model_name(const ServeOptions& options);

// ServerConfig from the options; reads --api-key-file (UsageError naming the file and the fix
// when it is not a private regular file).
ServerConfig server_config(const ServeOptions& options);

// Where the tokenizer and the chat template's special tokens come from: --tokenizer-dir, else
// the model folder.
std::string tokenizer_dir(const ServeOptions& options);

// The chat template: --chat-template FILE, else the tokenizer folder's. nullopt (with `why` set)
// when the model has none: the server then answers /v1/chat/completions with 400 naming the flag.
std::optional<trainer::serve::ChatTemplateFiles> find_chat_template(const ServeOptions& options,
                                                                    std::string& why);

// Serves until SIGINT or SIGTERM (then stops and returns 0). The backend is the model's engine,
// built from options.max_batch and max_queue by the caller; template_files: find_chat_template's.
int run_server(const ServeOptions& options, GenerationBackend& backend,
               const trainer::Tokenizer& tokenizer,
               const std::optional<trainer::serve::ChatTemplateFiles>& template_files);

}  // namespace fabkit::serve
