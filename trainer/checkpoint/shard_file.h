// One rank's shard file: "FABSHRD1", u64 little-endian header length, a JSON header naming every
// array (unit, name, element count), then the arrays' fp32 values in header order.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/json.h"
#include "trainer/optim/optimizer.h"

namespace fabkit::trainer {

struct ShardFileUnit {
  std::string unit;
  std::vector<NamedArray> arrays;  // "param" first, then the optimizer's state
};

struct ShardFileContents {
  Json header;
  std::vector<ShardFileUnit> units;
};

// Temp file + rename; throws SysErrorException naming the path.
void write_shard_file(const std::filesystem::path& path, const Json& header,
                      const std::vector<ShardFileUnit>& units);
// Throws UsageError naming the file and the byte offset of what is wrong. Every count in the
// header is checked against the bytes the file really holds (no arithmetic that can wrap), so a
// hostile header can neither read past the file nor allocate more than the file's size.
ShardFileContents read_shard_file(const std::filesystem::path& path);
// The same through an open regular file; `shown` names it in messages.
ShardFileContents read_shard_file(int fd, const std::string& shown);

// A shard header lists one entry per array (a few per unit, a few hundred units): kilobytes.
inline constexpr uint64_t kMaxShardHeaderBytes = 64ull << 20;

}  // namespace fabkit::trainer
