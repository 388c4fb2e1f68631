#include "trainer/serve/http/serve_options.h"

#include <filesystem>

#include "common/errors.h"
#include "trainer/serve/http/api_key.h"

namespace fabkit::serve {

void bind_serve_options(CLI::App& c, ServeOptions& o) {
  c.add_option("--model", o.model_dir,
               "HF model directory (config.json, weights, tokenizer), or a fabtrain checkpoint "
               "(OUTPUT/checkpoint-NNNNNNNN)")
      ->required()
      ->check(CLI::ExistingDirectory);
  c.add_option("--tokenizer-dir", o.tokenizer_dir,
               "tokenizer and chat template from DIR (default: the model folder; for a "
               "checkpoint, the model directory its training run recorded)")
      ->check(CLI::ExistingDirectory);
  c.add_option("--host", o.host, "address to listen on (loopback by default: the API has no TLS)");
  c.add_option("--port", o.port, "TCP port (0: any free port, printed at start)")
      ->check(CLI::Range(0, 65535));
  c.add_option("--api-key-file", o.api_key_file,
               "file holding the bearer token clients must send (chmod 600)")
      ->check(CLI::ExistingFile);
  c.add_option("--chat-template", o.chat_template_file,
               "Jinja chat template file (default: the tokenizer folder's)")
      ->check(CLI::ExistingFile);
  c.add_option("--max-batch", o.max_batch, "requests decoded together")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  c.add_option("--max-queue", o.max_queue, "requests waiting for a slot before 503")
      ->check(CLI::Range(int64_t{1}, int64_t{65536}));  // the engine admits through its queue
  c.add_option("--max-body-bytes", o.max_body_bytes, "largest request body (413 beyond)")
      ->check(CLI::Range(uint64_t{1024}, uint64_t{1} << 30));
  c.add_option("--served-model-name", o.served_model_name,
               "the model name clients use (default: the model folder's name)");
  c.add_option("--read-timeout-s", o.read_timeout_s, "seconds a request may take to arrive")
      ->check(CLI::Range(1, 3600));
  c.add_option("--write-timeout-s", o.write_timeout_s, "seconds a write to a client may block")
      ->check(CLI::Range(1, 3600));
  c.add_option("--generation-timeout-s", o.generation_timeout_s,
               "seconds a request may generate before it is cancelled (504)")
      ->check(CLI::Range(1, 86400));
  c.add_option("--http-threads", o.http_threads,
               "connection threads (0: max-batch + max-queue + 16)")
      ->check(CLI::Range(0, 4096));
}

std::string served_model_name(const ServeOptions& o) {
  if (!o.served_model_name.empty()) return o.served_model_name;
  std::filesystem::path dir(o.model_dir);
  if (!dir.has_filename()) dir = dir.parent_path();  // "models/tiny/" names "tiny"
  return dir.filename().string();
}

ServerConfig server_config(const ServeOptions& o) {
  ServerConfig c;
  c.host = o.host;
  c.port = o.port;
  if (!o.api_key_file.empty()) c.api_key = load_api_key(o.api_key_file);
  c.max_body_bytes = o.max_body_bytes;
  c.read_timeout_s = o.read_timeout_s;
  c.write_timeout_s = o.write_timeout_s;
  c.generation_timeout_s = o.generation_timeout_s;
  c.http_threads =
      o.http_threads > 0 ? o.http_threads : static_cast<int>(o.max_batch + o.max_queue + 16);
  if (served_model_name(o).empty()) {
    throw UsageError("--served-model-name: the model has no name (--model " + o.model_dir +
                     "); pass --served-model-name NAME");
  }
  return c;
}

std::string tokenizer_dir(const ServeOptions& o) {
  return o.tokenizer_dir.empty() ? o.model_dir : o.tokenizer_dir;
}

std::optional<trainer::serve::ChatTemplateFiles> find_chat_template(const ServeOptions& o,
                                                                    std::string& why) {
  if (!o.chat_template_file.empty()) {
    return trainer::serve::load_chat_template_file(o.chat_template_file, tokenizer_dir(o));
  }
  try {
    return trainer::serve::load_chat_template(tokenizer_dir(o));
  } catch (const std::runtime_error& e) {
    why = e.what();
    return std::nullopt;
  }
}

}  // namespace fabkit::serve
