// One rank's shard file: "FABSHRD1", u64 little-endian header length, a JSON header naming every
// array (unit, name, element count), then the arrays' fp32 values in header order.
#pragma once

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
// Throws UsageError naming the file and the byte offset of what is wrong.
ShardFileContents read_shard_file(const std::filesystem::path& path);

}  // namespace fabkit::trainer
