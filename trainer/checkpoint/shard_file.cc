#include "trainer/checkpoint/shard_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/regular_file.h"
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

namespace {

// Reads exactly n bytes at offset; a file that ends sooner (it shrank since its size was taken)
// is an error naming where.
void read_exactly(int fd, void* into, uint64_t n, uint64_t offset, const std::string& shown) {
  auto* p = static_cast<char*>(into);
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      throw UsageError("checkpoint shard " + shown + ": read failed at offset " +
                       std::to_string(offset) + " (" + std::strerror(errno) + ")");
    if (got == 0)
      throw UsageError("checkpoint shard " + shown + ": ends at offset " + std::to_string(offset) +
                       ", before the bytes its header describes: truncated while being read");
    p += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<uint64_t>(got);
  }
}

}  // namespace

ShardFileContents read_shard_file(const std::filesystem::path& path) {
  const UniqueFd fd = open_regular_file(path, "checkpoint shard " + path.string());
  return read_shard_file(fd.get(), path.string());
}

ShardFileContents read_shard_file(int fd, const std::string& shown) {
  const std::string what = "checkpoint shard " + shown;
  const uint64_t file_size = open_file_size(fd, what);
  if (file_size < 16)
    throw UsageError(
        what + ": " + std::to_string(file_size) +
        " bytes, shorter than the 16-byte prefix (magic + header length): not a fabtrain shard");
  char prefix[16];
  read_exactly(fd, prefix, sizeof prefix, 0, shown);
  if (std::memcmp(prefix, kMagic, 8) != 0)
    throw UsageError(what + ": bad magic at offset 0 (not a fabtrain shard)");
  uint64_t len = 0;
  std::memcpy(&len, prefix + 8, sizeof(len));  // x86/ARM: little-endian, as written
  if (len > file_size - 16) {
    throw UsageError(what + ": header length " + std::to_string(len) +
                     " at offset 8 runs past the end of the file (" + std::to_string(file_size) +
                     " bytes): truncated");
  }
  if (len > kMaxShardHeaderBytes) {
    throw UsageError(what + ": header length " + std::to_string(len) +
                     " at offset 8 is above the " + std::to_string(kMaxShardHeaderBytes) +
                     "-byte limit (a header lists a few arrays per unit: "
                     "kilobytes): corrupt");
  }
  std::string text(len, '\0');
  read_exactly(fd, text.data(), len, 16, shown);
  ShardFileContents c;
  try {
    c.header = parse_json(text, what + ": header JSON at offset 16");
  } catch (const JsonReadError& e) {
    throw UsageError(e.what());
  }
  uint64_t offset = 16 + len;
  try {
    if (!c.header.is_object() || !c.header.contains("units") || !c.header.at("units").is_array())
      throw UsageError(what + ": header field \"units\" (an array) is missing");
    for (const auto& ju : c.header.at("units")) {
      ShardFileUnit u;
      u.unit = ju.at("unit").get<std::string>();
      for (const auto& ja : ju.at("arrays")) {
        NamedArray a;
        a.name = ja.at("name").get<std::string>();
        const Json& jc = ja.at("count");
        if (!jc.is_number_unsigned()) {
          throw UsageError(what + ": array " + u.unit + "/" + a.name + ": count " + jc.dump() +
                           " is not a non-negative integer");
        }
        // Compared in elements, never multiplied: count x 4 wraps for counts above 2^62.
        const uint64_t count = jc.get<uint64_t>();
        if (count > (file_size - offset) / sizeof(float)) {
          throw UsageError(what + ": array " + u.unit + "/" + a.name + " at offset " +
                           std::to_string(offset) + " has count " + std::to_string(count) +
                           " (4 bytes each) but only " + std::to_string(file_size - offset) +
                           " bytes follow, the file ends at " + std::to_string(file_size) +
                           ": truncated or corrupt");
        }
        a.values.resize(count);
        read_exactly(fd, a.values.data(), count * sizeof(float), offset, shown);
        offset += count * sizeof(float);
        u.arrays.push_back(std::move(a));
      }
      c.units.push_back(std::move(u));
    }
  } catch (const Json::exception& e) {
    throw UsageError(what + ": header field missing or mistyped: " + e.what());
  }
  if (offset != file_size) {
    throw UsageError(what + ": " + std::to_string(file_size - offset) +
                     " unexpected bytes after offset " + std::to_string(offset));
  }
  return c;
}

}  // namespace fabkit::trainer
