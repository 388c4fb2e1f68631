#include "trainer/app/export_output.h"

#include <fcntl.h>
#include <stdlib.h>  // mkdtemp
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/regular_file.h"
#include "trainer/app/checkpoint_model.h"
#include "trainer/tokenizer/tokenizer.h"

namespace fs = std::filesystem;

namespace fabkit::trainer {
namespace {

// What transformers' save_pretrained writes beside the weights for a tokenizer and generation.
constexpr const char* kModelDirFiles[] = {"tokenizer.model", "tokenizer_config.json",
                                          "special_tokens_map.json", "generation_config.json"};

// --out as one directory name: absolute, without a trailing slash, and where it exists the real
// directory (a symlink's target), so the staging directory is made on its filesystem.
fs::path resolved_out(const fs::path& out) {
  fs::path p = fs::absolute(out).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::error_code ec;
  if (fs::exists(p, ec)) p = fs::canonical(p);
  return p;
}

}  // namespace

std::vector<ModelDirFile> read_model_dir_files(const std::string& model_dir, const Json& manifest,
                                               const std::string& manifest_path,
                                               std::vector<std::string>* notes) {
  std::string dir = model_dir;
  std::string shown = "--model-dir " + model_dir;
  if (dir.empty()) {
    std::string why;
    dir = recorded_model_dir(manifest, manifest_path, why);
    if (!why.empty()) {
      notes->push_back("no tokenizer files copied: " + why + "; pass --model-dir DIR to copy them");
      return {};
    }
    shown = dir + " (" + manifest_path + " field model_dir)";
  }
  const UniqueFd dir_fd = open_directory(dir, shown);
  std::vector<ModelDirFile> files;
  for (const char* name : kModelDirFiles) {
    struct stat st {};
    if (::fstatat(dir_fd.get(), name, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT) continue;
    const std::string file = (fs::path(dir) / name).string();
    try {
      // Beneath the directory only: the export must never carry a file from elsewhere (a symlink
      // to /etc/shadow in a directory a user controls) into what root writes.
      const UniqueFd fd = open_regular_beneath(dir_fd.get(), name, file);
      files.push_back(
          {name, read_all_capped(fd.get(), kMaxTokenizerFileBytes, file, kTokenizerFileLimitWhy)});
    } catch (const UsageError& e) {
      throw UsageError(
          std::string(e.what()) + "; the export copies " + name + " from the model directory " +
          shown +
          ": put the file itself there, or pass --model-dir DIR naming a directory that "
          "holds it");
    }
  }
  return files;
}

fs::path make_export_staging(const fs::path& out_arg) {
  const fs::path out = resolved_out(out_arg);
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec))
    throw UsageError("--out " + out_arg.string() + " exists and is not a directory");
  fs::create_directories(out.parent_path());
  // Root exporting into a directory another user controls would let that user swap what is
  // published there (common/trusted_path.h); an existing --out receives the files by rename too.
  try {
    require_trusted_output_dir(out.parent_path());
    if (fs::is_directory(out, ec)) require_trusted_output_dir(out);
  } catch (const UsageError& e) {
    throw UsageError("--out " + out_arg.string() + ": " + e.what());
  }
  std::string name =
      (out.parent_path() / ("." + out.filename().string() + ".exporting-XXXXXX")).string();
  if (::mkdtemp(name.data()) == nullptr) throw SysErrorException({"mkdtemp", errno, name});
  return name;
}

std::vector<fs::path> publish_export(const fs::path& staging, const fs::path& out_arg) {
  const fs::path out = resolved_out(out_arg);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(staging))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  std::vector<fs::path> published;
  for (const auto& n : names) published.push_back(out / n);
  // A new --out: the whole directory appears at once. mkdtemp made it 0700; it gets the mode
  // create_directories would have given it.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (::chmod(staging.c_str(), 0777 & ~mask) != 0)
    throw SysErrorException({"chmod", errno, staging.string()});
  if (::rename(staging.c_str(), out.c_str()) == 0) {
    fsync_directory(out.parent_path());
    return published;
  }
  if (errno != EEXIST && errno != ENOTEMPTY && errno != EISDIR)
    throw SysErrorException({"rename", errno, staging.string() + " -> " + out.string()});
  // An existing --out keeps its other files; each exported file replaces its namesake whole.
  for (const auto& n : names) {
    if (::rename((staging / n).c_str(), (out / n).c_str()) != 0)
      throw SysErrorException(
          {"rename", errno, (staging / n).string() + " -> " + (out / n).string()});
  }
  // SafetensorsCheckpoint reads model.safetensors before an index: the one not written now goes.
  const bool single = std::find(names.begin(), names.end(), "model.safetensors") != names.end();
  std::error_code ec;
  fs::remove(out / (single ? "model.safetensors.index.json" : "model.safetensors"), ec);
  fsync_directory(out);
  fs::remove_all(staging, ec);
  return published;
}

}  // namespace fabkit::trainer
