#include "common/replay_file.h"

#include "common/errors.h"
#include "common/file_reader.h"
#include "common/json_read.h"

namespace fabkit {

Json read_replay_json(const std::string& what, const std::filesystem::path& file,
                      uintmax_t max_bytes, const std::string& fix) {
  // Refused by size up front: read_text stops at its cap, and a cut file would only say "not
  // valid JSON" somewhere near its end.
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(file, ec);
  if (!ec && size > max_bytes)
    throw UsageError(what + ": " + std::to_string(size) +
                     " bytes, larger than any recorded file (" + std::to_string(max_bytes >> 20) +
                     " MiB)" + fix);
  auto text = read_text(file, static_cast<size_t>(max_bytes));
  if (!ok(text)) throw UsageError(what + ": " + error(text).to_string() + fix);
  try {
    return parse_json(value(text), what);
  } catch (const JsonReadError& e) {
    throw UsageError(e.what() + fix);
  }
}

}  // namespace fabkit
