// run_server: the model-independent part of `fabtrain serve` (serve_options.h).
#include <signal.h>

#include <cstdio>
#include <ctime>

#include "common/json_read.h"
#include "common/regular_file.h"
#include "trainer/serve/http/serve_options.h"

namespace fabkit::serve {
namespace {

// Whether a text prompt starts with BOS: tokenizer_config.json's add_bos_token where the model
// says; else SentencePiece models (Llama 2, Mistral) do, as their HF tokenizers do by default.
bool wants_bos(const std::string& tokenizer_dir, const trainer::Tokenizer& tokenizer) {
  const std::filesystem::path config =
      std::filesystem::path(tokenizer_dir) / "tokenizer_config.json";
  if (std::filesystem::is_regular_file(config)) {
    // A file that is not JSON is refused (JsonReadError names it), as the chat template's reader
    // of the same file does.
    const Json j = parse_json(
        read_regular_file(config, trainer::kMaxTokenizerFileBytes, trainer::kTokenizerFileLimitWhy),
        config.string());
    if (j.is_object() && j.contains("add_bos_token") && j["add_bos_token"].is_boolean()) {
      return j["add_bos_token"].get<bool>();
    }
  }
  return tokenizer.kind() == "sentencepiece" && tokenizer.bos_id().has_value();
}

}  // namespace

int run_server(const ServeOptions& options, GenerationBackend& backend,
               const trainer::Tokenizer& tokenizer,
               const std::optional<trainer::serve::ChatTemplateFiles>& template_files) {
  ServedModel model;
  model.name = served_model_name(options);
  model.tokenizer = &tokenizer;
  model.add_bos = wants_bos(tokenizer_dir(options), tokenizer);
  model.stop_token_ids.push_back(tokenizer.eos_id());
  std::optional<trainer::serve::ChatTemplate> chat_template;
  if (template_files) {
    chat_template.emplace(template_files->source);
    model.chat_template = &*chat_template;
    model.special_tokens = template_files->special_tokens;
    // A chat turn ends with the template's eos_token (ChatML's <|im_end|> where it is the EOS).
    auto eos = model.special_tokens.find("eos_token");
    if (eos != model.special_tokens.end()) {
      if (auto id = tokenizer.special_token_id(eos->second); id && *id != tokenizer.eos_id()) {
        model.stop_token_ids.push_back(*id);
      }
    }
  }

  // SIGINT/SIGTERM are taken by sigtimedwait below: blocked before the server's threads start,
  // so they inherit the mask and the signal reaches this thread, which stops the server cleanly.
  sigset_t signals, old_mask;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, &old_mask);
  int exit_code = 0;
  {
    HttpServer server(server_config(options), backend, std::move(model));
    std::fprintf(stderr, "fabtrain serve: listening on http://%s:%d/v1 (model '%s'%s)\n",
                 options.host.c_str(), server.port(), served_model_name(options).c_str(),
                 template_files ? "" : ", no chat template: /v1/chat/completions disabled");
    std::fflush(stderr);
    const timespec poll{1, 0};
    while (true) {
      int sig = sigtimedwait(&signals, nullptr, &poll);
      if (sig == SIGINT || sig == SIGTERM) {
        std::fprintf(stderr, "fabtrain serve: %s, stopping\n",
                     sig == SIGINT ? "SIGINT" : "SIGTERM");
        break;
      }
      if (!server.running()) {
        std::fprintf(stderr, "fabtrain serve: the listener stopped unexpectedly\n");
        exit_code = 1;
        break;
      }
    }
    server.stop();
    server.wait();
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  return exit_code;
}

}  // namespace fabkit::serve
