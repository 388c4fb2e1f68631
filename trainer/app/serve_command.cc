// `fabtrain serve --model DIR [--port N] ...`: the model behind an OpenAI-compatible HTTP server
// (docs/fabtrain-serve.md). The model side is serve/engine (KV cache, continuous batching), the
// HTTP side serve/http; this file loads the model (an HF folder, or a fabtrain checkpoint gathered
// in memory as `fabtrain export` would write it), its tokenizer and chat template, puts the model
// on its device and joins them.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "common/errors.h"
#include "trainer/app/checkpoint_model.h"
#include "trainer/app/commands.h"
#include "trainer/app/device_setup.h"
#include "trainer/model/pretrained.h"
#include "trainer/serve/engine/decode_engine.h"
#include "trainer/serve/http/serve_options.h"
#include "trainer/tokenizer/tokenizer.h"

namespace fs = std::filesystem;

namespace fabkit::trainer {
namespace {

// The directory whose tokenizer a checkpoint's run used: --tokenizer-dir, else the manifest's
// model_dir (the --model of the training run, recorded absolute). A checkpoint has no tokenizer of
// its own, and a wrong one would serve garbage without an error, so an unusable record is a
// UsageError naming the flag rather than a fallback.
std::string checkpoint_tokenizer_dir(const CheckpointModel& c, const std::string& flag) {
  if (!flag.empty()) return flag;
  std::string why;
  const std::string dir = recorded_model_dir(c.manifest, c.manifest_path, why);
  if (!why.empty()) {
    throw UsageError(c.manifest_path + ": the tokenizer of a checkpoint is its training run's (" +
                     why +
                     "); pass --tokenizer-dir DIR naming the model folder it was trained from");
  }
  return dir;
}

// The model in `dtype` on the CPU: an HF folder's weights, or a checkpoint's (fp32, cast).
LlamaModel load_served_model(fabkit::serve::ServeOptions& o, torch::ScalarType dtype) {
  if (is_fabtrain_checkpoint(o.model_dir)) {
    CheckpointModel c = load_checkpoint_model(o.model_dir);
    o.tokenizer_dir = checkpoint_tokenizer_dir(c, o.tokenizer_dir);
    c.model->to(dtype);
    c.model->set_compute_dtype(dtype);
    std::fprintf(stderr, "fabtrain serve: checkpoint %s (step %s), tokenizer from %s\n",
                 o.model_dir.c_str(), c.manifest.value("step", Json()).dump().c_str(),
                 o.tokenizer_dir.c_str());
    return c.model;
  }
  LoadOptions lo;
  lo.dtype = dtype;
  LoadedModel loaded = load_pretrained(o.model_dir, lo);
  if (loaded.random_init) {
    throw UsageError("--model " + o.model_dir +
                     ": config.json but no weights (*.safetensors); serving a random model says "
                     "nothing. Export a trained one with `fabtrain export`, or pass its checkpoint "
                     "directory (OUTPUT/checkpoint-NNNNNNNN)");
  }
  return loaded.model;
}

}  // namespace

void register_serve_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<fabkit::serve::ServeOptions>();
  auto dtype = std::make_shared<std::string>("float32");
  auto device = std::make_shared<std::string>("auto");
  auto threads = std::make_shared<int>(0);
  CLI::App* cmd = app.add_subcommand(
      "serve", "serve a model over an OpenAI-compatible HTTP API (docs/fabtrain-serve.md)");
  fabkit::serve::bind_serve_options(*cmd, *o);
  cmd->add_option("--torch-dtype", *dtype, "float32 | bfloat16 (the weights are cast to it)")
      ->check(CLI::IsMember({"float32", "bfloat16"}));
  cmd->add_option("--device", *device, "auto | cpu | cuda (auto: a GPU when one is visible)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_option("--threads", *threads, "ATen intra-op threads (0: torch's default)")
      ->check(CLI::Range(0, 1024));
  cmd->callback([o, dtype, device, threads, exit_code] {
    if (*threads > 0) at::set_num_threads(*threads);
    // Chosen first: `--device cuda` without a GPU is refused before minutes of loading.
    const TrainDevice where = choose_train_device(*device, LaunchEnv{}, {});
    LlamaModel model = load_served_model(*o, parse_dtype_name(*dtype));
    if (where.cuda) {
      model->to(where.device());
      model->set_device(where.device());
    }
    std::fprintf(stderr, "fabtrain serve: %s on %s (%s)\n", dtype->c_str(),
                 where.device().str().c_str(), where.reason.c_str());
    std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(fabkit::serve::tokenizer_dir(*o));
    std::string why;
    const auto chat_template = fabkit::serve::find_chat_template(*o, why);
    if (!chat_template) std::fprintf(stderr, "fabtrain serve: no chat template: %s\n", why.c_str());
    fabkit::serve::DecodeEngineOptions eo;
    eo.max_batch = o->max_batch;
    eo.queue_capacity = o->max_queue;
    fabkit::serve::DecodeEngine engine(model, eo);
    *exit_code = fabkit::serve::run_server(*o, engine, *tokenizer, chat_template);
  });
}

}  // namespace fabkit::trainer
