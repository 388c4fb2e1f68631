#include "trainer/checkpoint/shard_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/json_read.h"

namespace fabkit::trainer {
namespace {
constexpr char kMagic[8] = {'F', 'A', 'B', 'S', 'H', 'R', 'D', '1'};
}

void write_shard_file(const std::filesystem::path& path, const Json& header_in,
                      const std::vector<ShardFileUnit>& units) {
  Json header = header_in;
  header["units"] = Json::array();
  for (const auto& u : units) {
    Json arrays = Json::array();
    for (const auto& a : u.arrays) arrays.push_back({{"name", a.name}, {"count", a.values.size()}});
    header["units"].push_back({{"unit", u.unit}, {"arrays", arrays}});
  }
  const std::string text = header.dump();
  const uint64_t len = text.size();
  // Durable before the manifest vouches for it (common/atomic_file.h).
  write_file_atomically(path, [&](std::ostream& out) {
    out.write(kMagic, sizeof(kMagic));
    out.write(reinterpret_cast<const char*>(&len), sizeof(len));  // x86/ARM: little-endian
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& u : units) {
      for (const auto& a : u.arrays) {
        out.write(reinterpret_cast<const char*>(a.values.data()),
                  static_cast<std::streamsize>(a.values.size() * sizeof(float)));
      }
    }
  });
}

ShardFileContents read_shard_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("checkpoint shard " + path.string() + ": cannot open (" + std::strerror(errno) + ")");
  char magic[8];
  uint64_t len = 0;
  in.read(magic, 8);
  in.read(reinterpret_cast<char*>(&len), sizeof(len));
  if (!in || std::memcmp(magic, kMagic, 8) != 0) {
    throw UsageError("checkpoint shard " + path.string() + ": bad magic at offset 0 (not a fabtrain shard)");
  }
  const auto file_size = std::filesystem::file_size(path);
  if (len > file_size - 16) {
    throw UsageError("checkpoint shard " + path.string() + ": header length " + std::to_string(len) +
                     " at offset 8 runs past the end of the file (" + std::to_string(file_size) + " bytes): truncated");
  }
  std::string text(len, '\0');
  in.read(text.data(), static_cast<std::streamsize>(len));
  ShardFileContents c;
  try {
    c.header = parse_json(text, "checkpoint shard " + path.string() + ": header JSON at offset 16");
  } catch (const JsonReadError& e) {
    throw UsageError(e.what());
  }
  uint64_t offset = 16 + len;
  try {
    for (const auto& ju : c.header.at("units")) {
      ShardFileUnit u;
      u.unit = ju.at("unit").get<std::string>();
      for (const auto& ja : ju.at("arrays")) {
        NamedArray a;
        a.name = ja.at("name").get<std::string>();
        const uint64_t count = ja.at("count").get<uint64_t>();
        if (offset + count * sizeof(float) > file_size) {
          throw UsageError("checkpoint shard " + path.string() + ": array " + u.unit + "/" + a.name + " at offset " +
                           std::to_string(offset) + " needs " + std::to_string(count * sizeof(float)) +
                           " bytes, the file ends at " + std::to_string(file_size) + ": truncated");
        }
        a.values.resize(count);
        in.read(reinterpret_cast<char*>(a.values.data()), static_cast<std::streamsize>(count * sizeof(float)));
        offset += count * sizeof(float);
        u.arrays.push_back(std::move(a));
      }
      c.units.push_back(std::move(u));
    }
  } catch (const Json::exception& e) {
    throw UsageError("checkpoint shard " + path.string() + ": header field missing or mistyped: " + e.what());
  }
  if (offset != file_size) {
    throw UsageError("checkpoint shard " + path.string() + ": " + std::to_string(file_size - offset) +
                     " unexpected bytes after offset " + std::to_string(offset));
  }
  return c;
}

}  // namespace fabkit::trainer
