// Reading and writing HF safetensors checkpoints as torch tensors: one file, or shards listed in
// model.safetensors.index.json ({"weight_map": {tensor: file}}). Files are memory-mapped and
// tensors copied out, so a loaded model never points into a file that may be replaced.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "trainer/io/safetensors_header.h"

namespace fabkit::trainer {

// model.safetensors.index.json is read whole; far above any real index (one line per tensor).
constexpr uint64_t kMaxSafetensorsIndexBytes = 64ull << 20;

// torch dtype of a safetensors dtype string (UsageError when torch has no equivalent).
at::ScalarType torch_dtype_of(const std::string& safetensors_dtype, const std::string& context);
std::string safetensors_dtype_of(at::ScalarType t);

class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::filesystem::path& path);  // UsageError when malformed
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }
  // A CPU tensor owning a copy of the bytes, in the file's dtype.
  at::Tensor tensor(const SafetensorsEntry& e) const;
  at::Tensor tensor(const std::string& name) const;  // UsageError when absent

 private:
  std::filesystem::path path_;
  SafetensorsHeader header_;
  const unsigned char* map_ = nullptr;
  uint64_t map_bytes_ = 0;
};

// A checkpoint directory or file: DIR/model.safetensors, DIR/model.safetensors.index.json with
// its shards, or a path to one .safetensors file.
class SafetensorsCheckpoint {
 public:
  static bool present_in(const std::filesystem::path& dir);
  explicit SafetensorsCheckpoint(const std::filesystem::path& dir_or_file);

  std::vector<std::string> names() const;  // sorted
  bool contains(const std::string& name) const { return where_.count(name) != 0; }
  // The file and header entry of a tensor (UsageError naming the checkpoint when absent).
  std::pair<const SafetensorsFile*, const SafetensorsEntry*> locate(const std::string& name) const;
  at::Tensor tensor(const std::string& name) const;
  std::vector<std::filesystem::path> files() const;

 private:
  std::string source_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, std::pair<const SafetensorsFile*, const SafetensorsEntry*>> where_;
};

// Writes tensors (CPU, any layout; copied contiguous) under their names, sorted by name, with a
// header padded with spaces to a multiple of 8 bytes and metadata {"format": "pt"} (what
// transformers' from_pretrained expects). Written to a temporary file then renamed: the path
// either holds the old file or the complete new one.
void write_safetensors(const std::filesystem::path& path,
                       const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

// Writes DIR/model.safetensors, or above max_shard_bytes DIR/model-0000i-of-0000n.safetensors
// plus model.safetensors.index.json (written last). Tensors are kept in the given order when
// assigning shards. Returns the files written.
std::vector<std::filesystem::path> write_safetensors_checkpoint(
    const std::filesystem::path& dir, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
    uint64_t max_shard_bytes);

}  // namespace fabkit::trainer
