// The user-facing face of common/atomic_file.h for files named by --out (profiles, env files):
// the same atomic, fsync'd write, with failures reported as usage errors naming the path.
#pragma once

#include <filesystem>
#include <string>

namespace fabkit::profile {

// Throws UsageError (directory missing, not writable) naming the path; leaves no temp file.
void write_file_atomically(const std::filesystem::path& path, const std::string& content);

}  // namespace fabkit::profile
