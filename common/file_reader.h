// Small readers for sysfs/procfs-style files. They return what they found or a SysError value;
// callers decide whether a missing file is a fact ("no such attribute on this kernel") or a
// failure. A path under a --sysroot tree is read inside that tree (common/root_open.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <istream>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/errors.h"

namespace fabkit {

template <typename T>
using Expected = std::variant<T, SysError>;

template <typename T>
bool ok(const Expected<T>& e) { return std::holds_alternative<T>(e); }
template <typename T>
const T& value(const Expected<T>& e) { return std::get<T>(e); }
template <typename T>
const SysError& error(const Expected<T>& e) { return std::get<SysError>(e); }

// Whole file (capped at max_bytes; sysfs attributes are one page at most).
Expected<std::string> read_text(const std::filesystem::path& p, size_t max_bytes = 1 << 20);
// The whole of a stream (a pipe, standard input) into *out, reading no further than max_bytes and
// one byte more: false when the stream holds more than max_bytes, so input without end never
// fills memory.
// Throws SysErrorException when the stream fails (its errno).
bool read_stream_capped(std::istream& in, size_t max_bytes, std::string* out,
                        const std::string& name);
// First line without trailing whitespace/newline; nullopt when the file is absent or unreadable.
std::optional<std::string> read_line(const std::filesystem::path& p);
std::optional<int64_t> read_int(const std::filesystem::path& p);
// Names of the entries of a directory, sorted; empty when absent.
std::vector<std::string> list_dir(const std::filesystem::path& p);
// Target of a symlink's last component ("../../devices/pci0000:00/0000:00:02.0" -> "0000:00:02.0")
std::optional<std::string> symlink_basename(const std::filesystem::path& p);

std::string trim(const std::string& s);
std::vector<std::string> split(const std::string& s, char sep);
bool starts_with(const std::string& s, const std::string& prefix);

}  // namespace fabkit
