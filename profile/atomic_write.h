// Writing a file so that readers see the old content or the new, never a part: a temp file in
// the same directory (rename(2) is atomic only within one filesystem), fsync, rename.
#pragma once

#include <filesystem>
#include <string>

namespace fabkit::profile {

// Throws UsageError (directory missing, not writable) naming the path; leaves no temp file.
void write_file_atomically(const std::filesystem::path& path, const std::string& content);

}  // namespace fabkit::profile
