// Unix stream socket helpers for the control interface (both sides). Every wait has a deadline:
// the poll and write helpers are fabric/wire/socket_io.h's.
#pragma once

#include <sys/un.h>

#include <filesystem>
#include <string>

#include "common/unique_fd.h"
#include "fabric/wire/socket_io.h"

namespace fabkit::trainer::control {

// UsageError when path does not fit sun_path (108 bytes with the terminating NUL).
sockaddr_un unix_address(const std::filesystem::path& path);

// A non-blocking connected socket, or an invalid fd with *err = errno of connect (ECONNREFUSED:
// nobody listens, the job is gone; ENOENT: no socket file; EAGAIN: a live listener's backlog is
// full).
UniqueFd connect_unix(const std::filesystem::path& path, int* err);

enum class Liveness { kAlive, kRefused, kMissing };
// Connects and closes at once: kAlive when something listens (or its backlog is full).
Liveness probe_socket(const std::filesystem::path& path);

// Reads up to and without the first '\n'. Throws WireError: kTimeout, kClosed (EOF before any
// byte), kTruncated (EOF mid-line), kOversized (max_bytes without a newline).
std::string read_line(int fd, size_t max_bytes, wire::Deadline deadline, const char* what);

}  // namespace fabkit::trainer::control
