#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "common/errors.h"
#include "common/regular_file.h"
#include "common/json.h"
#include "common/json_read.h"
#include "trainer/io/safetensors.h"

namespace fabkit::trainer {
namespace fs = std::filesystem;

at::ScalarType torch_dtype_of(const std::string& d, const std::string& context) {
  if (d == "F32") return at::kFloat;
  if (d == "BF16") return at::kBFloat16;
  if (d == "F16") return at::kHalf;
  if (d == "F64") return at::kDouble;
  if (d == "I64") return at::kLong;
  if (d == "I32") return at::kInt;
  if (d == "I16") return at::kShort;
  if (d == "I8") return at::kChar;
  if (d == "U8") return at::kByte;
  if (d == "BOOL") return at::kBool;
  throw UsageError(context + ": dtype " + d + " has no torch equivalent in this build");
}

std::string safetensors_dtype_of(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "F32";
    case at::kBFloat16: return "BF16";
    case at::kHalf: return "F16";
    case at::kDouble: return "F64";
    case at::kLong: return "I64";
    case at::kInt: return "I32";
    case at::kShort: return "I16";
    case at::kChar: return "I8";
    case at::kByte: return "U8";
    case at::kBool: return "BOOL";
    default: throw UsageError(std::string("cannot store dtype ") + c10::toString(t) + " in safetensors");
  }
}

SafetensorsFile::SafetensorsFile(const fs::path& path) : path_(path) {
  const std::string file = path.string();
  // A regular file only: a FIFO would block the open, and a device's size (0 for /dev/zero) says
  // nothing about what reading it yields.
  const UniqueFd fd = open_regular_file(path, file);
  const uint64_t size = open_file_size(fd.get(), file);
  if (size < 8) {
    throw UsageError(file + ": " + std::to_string(size) +
                     " bytes is shorter than the 8-byte safetensors header length — truncated");
  }
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (m == MAP_FAILED) throw SysErrorException(SysError{"mmap", errno, file});
  map_ = static_cast<const unsigned char*>(m);
  map_bytes_ = size;
  try {
    uint64_t n = parse_safetensors_prefix(map_, size, file);
    header_ = parse_safetensors_header(std::string(reinterpret_cast<const char*>(map_ + 8), n), size, file);
  } catch (...) {
    ::munmap(const_cast<unsigned char*>(map_), map_bytes_);
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(const_cast<unsigned char*>(map_), map_bytes_);
}

at::Tensor SafetensorsFile::tensor(const SafetensorsEntry& e) const {
  auto t = at::empty(e.shape, at::TensorOptions().dtype(torch_dtype_of(e.dtype, path_.string() + ": tensor \"" + e.name + "\"")));
  // safetensors is little-endian, like every platform fabtrain runs on (x86-64, aarch64).
  if (e.end > e.begin) std::memcpy(t.data_ptr(), map_ + header_.data_start + e.begin, e.end - e.begin);
  return t;
}

at::Tensor SafetensorsFile::tensor(const std::string& name) const {
  const SafetensorsEntry* e = header_.find(name);
  if (!e) throw UsageError(path_.string() + ": no tensor named \"" + name + "\"");
  return tensor(*e);
}

bool SafetensorsCheckpoint::present_in(const fs::path& dir) {
  return fs::exists(dir / "model.safetensors") || fs::exists(dir / "model.safetensors.index.json");
}

SafetensorsCheckpoint::SafetensorsCheckpoint(const fs::path& p) {
  auto add_file = [&](const fs::path& f) {
    files_.push_back(std::make_unique<SafetensorsFile>(f));
    return files_.back().get();
  };
  fs::path index = p / "model.safetensors.index.json";
  if (fs::is_regular_file(p)) {
    source_ = p.string();
    const SafetensorsFile* f = add_file(p);
    for (const auto& e : f->header().tensors) where_[e.name] = {f, &e};
    return;
  }
  if (fs::exists(p / "model.safetensors")) {
    source_ = (p / "model.safetensors").string();
    const SafetensorsFile* f = add_file(p / "model.safetensors");
    for (const auto& e : f->header().tensors) where_[e.name] = {f, &e};
    return;
  }
  if (!fs::exists(index))
    throw UsageError(p.string() + ": neither model.safetensors nor model.safetensors.index.json "
                                  "found (only safetensors weights are read; convert .bin files first)");
  source_ = index.string();
  const std::string text = read_regular_file(index, kMaxSafetensorsIndexBytes,
                                             "an index lists one line per tensor: a few hundred KB "
                                             "for the largest models");
  Json doc;
  try {
    doc = parse_json(text, source_);
  } catch (const JsonReadError& e) {
    throw UsageError(e.what());
  }
  if (!doc.is_object() || !doc.contains("weight_map") || !doc.at("weight_map").is_object())
    throw UsageError(source_ + ": field \"weight_map\" (an object tensor -> shard file) is missing");
  std::map<std::string, const SafetensorsFile*> opened;
  for (auto it = doc.at("weight_map").begin(); it != doc.at("weight_map").end(); ++it) {
    if (!it.value().is_string())
      throw UsageError(source_ + ": weight_map[\"" + it.key() + "\"] must be a file name");
    std::string shard = it.value().get<std::string>();
    if (shard.find('/') != std::string::npos || shard == ".." || shard.empty())
      throw UsageError(source_ + ": weight_map[\"" + it.key() + "\"] = \"" + shard +
                       "\" must be a file name in the same directory");
    if (!opened.count(shard)) {
      if (!fs::exists(p / shard))
        throw UsageError(source_ + ": shard " + shard + " (holding \"" + it.key() + "\") does not exist");
      opened[shard] = add_file(p / shard);
    }
    const SafetensorsFile* f = opened[shard];
    const SafetensorsEntry* e = f->header().find(it.key());
    if (!e)
      throw UsageError(source_ + ": weight_map says \"" + it.key() + "\" is in " + shard +
                       " but that file has no such tensor");
    where_[it.key()] = {f, e};
  }
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [n, _] : where_) out.push_back(n);
  return out;
}

std::pair<const SafetensorsFile*, const SafetensorsEntry*> SafetensorsCheckpoint::locate(
    const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) throw UsageError(source_ + ": no tensor named \"" + name + "\"");
  return it->second;
}

at::Tensor SafetensorsCheckpoint::tensor(const std::string& name) const {
  auto [f, e] = locate(name);
  return f->tensor(*e);
}

std::vector<fs::path> SafetensorsCheckpoint::files() const {
  std::vector<fs::path> out;
  for (const auto& f : files_) out.push_back(f->path());
  return out;
}

}  // namespace fabkit::trainer
