// Files a user names on the command line (--out, --html, --prom, --json-out, --profile-out,
// --nvml-record): one check and one writer, so the same mistake gets the same answer in every
// command — a usage error (exit 2) naming the command's own flag, the path and the fix.
#pragma once

#include <string>

namespace fabkit {

// The path names a file in an existing directory. Commands call it for every output before any
// work starts, so a mistyped directory costs nothing (not minutes of measuring). Throws UsageError.
void check_output_path(const std::string& flag, const std::string& path);

// check_output_path, then the atomic write of common/atomic_file.h (readers see the old content
// or the new, never a part; no temp file is left). Any failure throws UsageError naming the flag.
void write_output_file(const std::string& flag, const std::string& path, const std::string& text);

}  // namespace fabkit
