// JSON Lines input: one JSON object per line. Bad lines (empty, not JSON, not an object) are
// errors naming the file and line, or are skipped and counted when the user asks for that.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "common/json.h"

namespace fabkit::trainer {

struct JsonlRecord {
  size_t line = 0;  // 1-based
  Json value;
};

struct JsonlContents {
  std::vector<JsonlRecord> records;
  size_t lines_skipped = 0;
  std::vector<std::string> skip_reasons;  // the first few "file:line: why", for the log
};

// Where a record came from, for messages: "train.jsonl:17".
std::string line_ref(const std::filesystem::path& file, size_t line);

// Throws UsageError ("FILE:LINE: ...") on the first bad line unless skip_bad_lines.
JsonlContents read_jsonl(const std::filesystem::path& file, bool skip_bad_lines);

// Records a bad line: throws when !skip, else counts it (keeping the first reasons).
void reject_line(JsonlContents& c, bool skip, const std::string& reason);

}  // namespace fabkit::trainer
