// Where `fabtrain export` writes: a staging directory beside --out, published once every file in
// it is complete, so a failed export (a full disk, a bad tensor) leaves --out as it was, and the
// files copied from the training run's model directory, read whole and checked before anything
// is written.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/json.h"

namespace fabkit::trainer {

// A file of the model directory the export copies (tokenizer and generation settings).
struct ModelDirFile {
  std::string name;
  std::string bytes;
};

// The tokenizer files of `model_dir` (--model-dir), else of the manifest's "model_dir". Each is
// opened beneath that directory (a symlink leading out of it, a FIFO or a device is a UsageError
// naming the file) and read whole, at most kMaxTokenizerFileBytes. A directory that cannot be
// used (none recorded, a relative path, absent here) copies nothing and adds a note saying why.
std::vector<ModelDirFile> read_model_dir_files(const std::string& model_dir, const Json& manifest,
                                               const std::string& manifest_path,
                                               std::vector<std::string>* notes);

// A new, empty directory beside `out` (same filesystem, so publishing it is a rename).
// UsageError when `out` exists and is not a directory.
std::filesystem::path make_export_staging(const std::filesystem::path& out);

// Moves the files of `staging` into `out`: a rename of the directory when `out` does not exist,
// else one rename per file (each file is replaced whole; a stale model.safetensors or index that
// the new weights supersede is removed). Returns the files' paths in `out`. Removes `staging`.
std::vector<std::filesystem::path> publish_export(const std::filesystem::path& staging,
                                                  const std::filesystem::path& out);

}  // namespace fabkit::trainer
