#include "trainer/data/jsonl_reader.h"

#include <fstream>

#include "common/errors.h"
#include "common/json_read.h"

namespace fabkit::trainer {

std::string line_ref(const std::filesystem::path& file, size_t line) {
  return file.string() + ":" + std::to_string(line);
}

void reject_line(JsonlContents& c, bool skip, const std::string& reason) {
  if (!skip) throw UsageError(reason + " (fix the line, or pass --skip-bad-lines to skip such lines)");
  ++c.lines_skipped;
  if (c.skip_reasons.size() < 5) c.skip_reasons.push_back(reason);
}

JsonlContents read_jsonl(const std::filesystem::path& file, bool skip_bad_lines) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UsageError(file.string() + ": cannot open the data file");
  JsonlContents c;
  std::string text;
  size_t line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (!text.empty() && text.back() == '\r') text.pop_back();  // files written on Windows
    std::string where = line_ref(file, line);
    if (text.find_first_not_of(" \t") == std::string::npos) {
      reject_line(c, skip_bad_lines, where + ": empty line");
      continue;
    }
    Json v;
    try {
      v = parse_json(text, where);
    } catch (const JsonReadError& e) {
      reject_line(c, skip_bad_lines, e.what());
      continue;
    }
    if (!v.is_object()) {
      reject_line(c, skip_bad_lines, where + ": expected a JSON object, found " + std::string(v.type_name()));
      continue;
    }
    c.records.push_back({line, std::move(v)});
  }
  return c;
}

}  // namespace fabkit::trainer
