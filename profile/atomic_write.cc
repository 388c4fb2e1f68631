#include "profile/atomic_write.h"

#include "common/atomic_file.h"
#include "common/errors.h"

namespace fabkit::profile {

void write_file_atomically(const std::filesystem::path& path, const std::string& content) {
  try {
    ::fabkit::write_file_atomically(path, content);
  } catch (const SysErrorException& e) {
    // The path is the user's --out: a failure is a usage error with the fix.
    throw UsageError("cannot write " + path.string() + ": " + e.what() + "; choose a writable directory with --out");
  }
}

}  // namespace fabkit::profile
