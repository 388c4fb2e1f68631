#include "common/output_file.h"

#include <filesystem>

#include "common/atomic_file.h"
#include "common/errors.h"

namespace fabkit {

void check_output_path(const std::string& flag, const std::string& path) {
  std::filesystem::path p(path);
  std::error_code ec;
  auto dir = p.parent_path().empty() ? std::filesystem::path(".") : p.parent_path();
  if (path.empty() || p.filename().empty() || !std::filesystem::is_directory(dir, ec))
    throw UsageError(flag + " " + path + ": the directory " + dir.string() +
                     " does not exist; create it or give another path");
  try {
    require_trusted_output_dir(dir);
  } catch (const UsageError& e) {
    throw UsageError(flag + " " + path + ": " + e.what());
  }
}

void write_output_file(const std::string& flag, const std::string& path, const std::string& text) {
  check_output_path(flag, path);
  try {
    write_file_atomically(path, text);
  } catch (const SysErrorException& e) {
    throw UsageError(flag + " " + path + ": cannot write it (" + e.what() +
                     "); give a path in a writable directory with space");
  }
}

}  // namespace fabkit
