// `fabtrain export --checkpoint DIR --out DIR`: gather a sharded checkpoint into HF safetensors +
// config.json (+ the tokenizer files of the model directory it was trained from).
//
// The checkpoint may be another user's (root exports what a job wrote), so everything it says is
// checked before anything is written: the checkpoint is gathered and checked whole
// (checkpoint_model.h), the model directory's files are read beneath it (export_output.h), and
// the files are written into a staging directory that becomes --out only once complete.
#include <torch/torch.h>

#include <filesystem>
#include <iostream>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "trainer/app/checkpoint_model.h"
#include "trainer/app/commands.h"
#include "trainer/app/export_output.h"
#include "trainer/model/pretrained.h"

namespace fs = std::filesystem;

namespace fabkit::trainer {
namespace {

struct ExportOptions {
  std::string checkpoint;
  std::string out;
  std::string model_dir;  // where the tokenizer files come from; empty: the manifest's model_dir
};

int run_export(const ExportOptions& o) {
  // 1. Read and check everything; nothing is written yet.
  CheckpointModel c = load_checkpoint_model(o.checkpoint);
  LlamaModel& model = c.model;
  const std::string& mpath = c.manifest_path;
  std::vector<std::string> notes;
  const std::vector<ModelDirFile> extra =
      read_model_dir_files(o.model_dir, c.manifest, mpath, &notes);

  // 2. Write into a staging directory beside --out; it becomes --out only once complete. On an
  // error it is removed here: fabtrain's error exit runs no destructors (app/error_exit.h).
  const fs::path staging = make_export_staging(o.out);
  std::vector<fs::path> files;
  try {
    save_pretrained(*model, staging);
    for (const auto& f : extra) write_file_atomically(staging / f.name, f.bytes);
    files = publish_export(staging, o.out);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(staging, ec);
    throw;
  }
  for (const auto& n : notes) std::cout << n << "\n";
  std::cout << "exported step " << c.manifest.value("step", Json()).dump() << " of " << o.checkpoint
            << " to " << o.out << " (" << files.size() << " files)" << std::endl;
  return 0;
}

}  // namespace

void register_export_command(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand("export", "gather a sharded checkpoint into HF safetensors + config.json");
  cmd->add_option("--checkpoint", opts->checkpoint, "OUTPUT/checkpoint-NNNNNNNN")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--out", opts->out, "directory for model.safetensors + config.json")->required();
  cmd->add_option("--model-dir", opts->model_dir,
                  "copy the tokenizer files from DIR (default: the model directory the checkpoint records)")
      ->check(CLI::ExistingDirectory);
  cmd->callback([opts, exit_code] { *exit_code = run_export(*opts); });
}

}  // namespace fabkit::trainer
