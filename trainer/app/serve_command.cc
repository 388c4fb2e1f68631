// `fabtrain serve --model DIR [--port N] ...`: the model behind an OpenAI-compatible HTTP server
// (docs/fabtrain-serve.md). The model side is serve/engine (KV cache, continuous batching), the
// HTTP side serve/http; this file loads the model, its tokenizer and chat template and joins them.
#include <memory>
#include <string>

#include <ATen/Parallel.h>

#include "common/errors.h"
#include "trainer/app/commands.h"
#include "trainer/model/pretrained.h"
#include "trainer/serve/engine/decode_engine.h"
#include "trainer/serve/http/serve_options.h"
#include "trainer/tokenizer/tokenizer.h"

namespace fabkit::trainer {

void register_serve_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<fabkit::serve::ServeOptions>();
  auto dtype = std::make_shared<std::string>("float32");
  auto threads = std::make_shared<int>(0);
  CLI::App* cmd = app.add_subcommand(
      "serve", "serve a model over an OpenAI-compatible HTTP API (docs/fabtrain-serve.md)");
  fabkit::serve::bind_serve_options(*cmd, *o);
  cmd->add_option("--torch-dtype", *dtype, "float32 | bfloat16 (the weights are cast to it)")
      ->check(CLI::IsMember({"float32", "bfloat16"}));
  cmd->add_option("--threads", *threads, "ATen intra-op threads (0: torch's default)")
      ->check(CLI::Range(0, 1024));
  cmd->callback([o, dtype, threads, exit_code] {
    if (*threads > 0) at::set_num_threads(*threads);
    LoadOptions lo;
    lo.dtype = parse_dtype_name(*dtype);
    LoadedModel loaded = load_pretrained(o->model_dir, lo);
    if (loaded.random_init) {
      throw UsageError("--model " + o->model_dir +
                       ": config.json but no weights (*.safetensors); serving a random model says "
                       "nothing. Export a trained one with `fabtrain export`");
    }
    std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(o->model_dir);
    std::string why;
    const auto chat_template = fabkit::serve::find_chat_template(*o, why);
    fabkit::serve::DecodeEngineOptions eo;
    eo.max_batch = o->max_batch;
    eo.queue_capacity = o->max_queue;
    fabkit::serve::DecodeEngine engine(loaded.model, eo);
    *exit_code = fabkit::serve::run_server(*o, engine, *tokenizer, chat_template);
  });
}

}  // namespace fabkit::trainer
