#include "common/replay_file.h"

#include "common/errors.h"
#include "common/input_file.h"
#include "common/json_read.h"

namespace fabkit {

Json read_replay_json(const std::string& what, const std::filesystem::path& file,
                      uintmax_t max_bytes, const std::string& fix) {
  // `what` is "OPTION FILE" and `fix` "; ...": the reader names the file and adds the "; ".
  const std::string option = what.substr(0, what.find(' '));
  const std::string text =
      read_input(file.string(), {option, max_bytes, fix.substr(fix.rfind("; ", 0) == 0 ? 2 : 0)});
  try {
    return parse_json(text, what);
  } catch (const JsonReadError& e) {
    throw UsageError(e.what() + fix);
  }
}

}  // namespace fabkit
