// Input files that another user may have written (a model directory, a dataset, a checkpoint),
// read by a program that often runs as root. A plain ifstream goes wrong three ways: a FIFO
// blocks the open forever, /dev/zero or a pipe streams without end until memory is gone, and a
// name with a symlink or ".." reads a file from somewhere else. These refuse anything but a
// regular file, check its size against a cap before reading a byte, and (the *_beneath forms)
// resolve a name only inside a directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "common/unique_fd.h"

namespace fabkit {

// Opens a regular file for reading; anything else (a FIFO, a device such as /dev/zero, a socket,
// a directory) is refused by name. The open is non-blocking, so a FIFO never holds it up.
// Throws UsageError "<shown>: cannot open (<strerror>)" or "<shown>: is a FIFO, not a regular
// file"; callers that treat a missing file as a fact check for it first.
UniqueFd open_regular_file(const std::filesystem::path& path, const std::string& shown);

// Why `relative` could name something outside the directory it is resolved in: "is an absolute
// path", "has a '..' component", "is empty", "holds a NUL byte"; nullopt when it cannot.
std::optional<std::string> why_not_beneath(const std::string& relative);

// Opens `relative` beneath the directory dir_fd and never outside it: an absolute path or a ".."
// component is refused (why_not_beneath), and symlinks are followed only while they stay beneath
// dir_fd (openat2 RESOLVE_BENEATH). On kernels without openat2 (before 5.6) every component is
// opened O_NOFOLLOW, so any symlink is refused there. Regular files only, as open_regular_file.
// `shown` names the file in messages.
UniqueFd open_regular_beneath(int dir_fd, const std::string& relative, const std::string& shown);
// The same for a directory.
UniqueFd open_directory_beneath(int dir_fd, const std::string& relative, const std::string& shown);
// A directory given by path (followed as given: the caller chose it).
UniqueFd open_directory(const std::filesystem::path& path, const std::string& shown);

// The size of an open regular file (fstat).
uint64_t open_file_size(int fd, const std::string& shown);

// All of an open regular file. One larger than max_bytes is refused before it is read:
// "<shown>: N bytes, more than the M-byte limit (<why_limit>)"; one that grows past it while
// being read is refused too, having read no more than max_bytes + 1 bytes.
std::string read_all_capped(int fd, uint64_t max_bytes, const std::string& shown,
                            const std::string& why_limit);

// open_regular_file + read_all_capped, naming the file by its path.
std::string read_regular_file(const std::filesystem::path& path, uint64_t max_bytes,
                              const std::string& why_limit);

namespace detail {
// open_*_beneath's way on kernels without openat2: one component at a time, O_NOFOLLOW.
// Exposed so the tests run it on kernels that have openat2.
UniqueFd open_beneath_by_components(int dir_fd, const std::string& relative, bool directory,
                                    const std::string& shown);
}  // namespace detail

}  // namespace fabkit
