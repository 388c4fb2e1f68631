#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <functional>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/json.h"
#include "trainer/io/safetensors.h"

namespace fabkit::trainer {
namespace fs = std::filesystem;
namespace {

// common/atomic_file.h: readers (and a restarted job) never see half a file, and a file that was
// published survives a crash.
void write_atomically(const fs::path& path, const std::function<void(std::ostream&)>& body) {
  write_file_atomically(path, body);
}

}  // namespace

void write_safetensors(const fs::path& path,
                       const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<std::string, at::Tensor>> sorted;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__") throw UsageError("a tensor cannot be named __metadata__");
    sorted.emplace_back(name, t.detach().to(at::kCPU).contiguous());
  }
  std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.first < b.first; });
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i].first == sorted[i - 1].first)
      throw UsageError(path.string() + ": tensor name \"" + sorted[i].first + "\" given twice");

  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : sorted) {
    uint64_t bytes = static_cast<uint64_t>(t.numel()) * t.element_size();
    header[name] = {{"dtype", safetensors_dtype_of(t.scalar_type())},
                    {"shape", t.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  // The spec allows trailing spaces; padding to 8 keeps the data buffer aligned for mmap readers.
  text.append((8 - text.size() % 8) % 8, ' ');
  write_atomically(path, [&](std::ostream& out) {
    uint64_t n = text.size();
    unsigned char prefix[8];
    for (int i = 0; i < 8; ++i) prefix[i] = static_cast<unsigned char>((n >> (8 * i)) & 0xff);
    out.write(reinterpret_cast<const char*>(prefix), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& [name, t] : sorted)
      out.write(static_cast<const char*>(t.data_ptr()),
                static_cast<std::streamsize>(t.numel() * t.element_size()));
  });
}

std::vector<fs::path> write_safetensors_checkpoint(
    const fs::path& dir, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
    uint64_t max_shard_bytes) {
  fs::create_directories(dir);
  uint64_t total = 0;
  std::vector<std::vector<std::pair<std::string, at::Tensor>>> shards(1);
  uint64_t in_shard = 0;
  for (const auto& nt : tensors) {
    uint64_t bytes = static_cast<uint64_t>(nt.second.numel()) * nt.second.element_size();
    // A tensor larger than the limit gets a shard of its own (as transformers does).
    if (in_shard > 0 && in_shard + bytes > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(nt);
    in_shard += bytes;
    total += bytes;
  }
  std::vector<fs::path> written;
  if (shards.size() == 1) {
    write_safetensors(dir / "model.safetensors", shards[0]);
    fs::remove(dir / "model.safetensors.index.json");  // a stale index would win over the file
    written.push_back(dir / "model.safetensors");
    return written;
  }
  Json weight_map = Json::object();
  char name[64];
  for (size_t i = 0; i < shards.size(); ++i) {
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    write_safetensors(dir / name, shards[i]);
    written.push_back(dir / name);
    for (const auto& nt : shards[i]) weight_map[nt.first] = name;
  }
  Json index = {{"metadata", {{"total_size", total}}}, {"weight_map", Json::object()}};
  std::vector<std::string> keys;
  for (auto it = weight_map.begin(); it != weight_map.end(); ++it) keys.push_back(it.key());
  std::sort(keys.begin(), keys.end());
  for (const auto& k : keys) index["weight_map"][k] = weight_map[k];
  write_atomically(dir / "model.safetensors.index.json",
                   [&](std::ostream& out) { out << index.dump(2) << "\n"; });
  fs::remove(dir / "model.safetensors");  // SafetensorsCheckpoint prefers a single file
  written.push_back(dir / "model.safetensors.index.json");
  return written;
}

}  // namespace fabkit::trainer
