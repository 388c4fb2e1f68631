// Blocking-with-deadline socket I/O. Every read and write waits in poll() with the time left
// until an absolute deadline, so no network wait in fabkit can hang (every network wait has a
// timeout: docs/architecture.md). Errors are WireError with a name: kTimeout, kClosed, kTruncated, kIo.
#pragma once

#include "common/unique_fd.h"
#include <chrono>
#include <cstddef>
#include <string>

#include "fabric/wire/frame.h"

struct pollfd;

namespace fabkit::wire {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

inline Deadline deadline_in_ms(int timeout_ms) {
  return Clock::now() + std::chrono::milliseconds(timeout_ms);
}
int ms_left(Deadline d);  // >= 0
// For a wait that something other than time ends (a server thread told to stop through a pipe
// it polls): poll_until then blocks without a timeout. Never for a wait on a peer.
inline constexpr Deadline kNoDeadline = Deadline::max();

using Fd = ::fabkit::UniqueFd;

// The one poll: waits until one of fds has an event (its revents set) or the deadline passes,
// retrying EINTR with the time left. Returns the number ready, 0 once the deadline has passed.
// Throws kIo when poll fails. Entries with fd -1 are ignored (poll's rule).
int poll_until(struct pollfd* fds, size_t n, Deadline deadline, const char* what);

// Waits until fd is readable (events = POLLIN) or writable (POLLOUT). Throws kTimeout.
void wait_fd(int fd, short events, Deadline deadline, const char* what);

// Reads exactly n bytes. EOF before the first byte -> kClosed, EOF after -> kTruncated.
void read_exact(int fd, void* buf, size_t n, Deadline deadline, const char* what);
void write_all(int fd, const void* buf, size_t n, Deadline deadline, const char* what);

Frame read_frame(int fd, Deadline deadline, uint32_t max_payload_bytes = kMaxControlFrameBytes);
void write_frame(int fd, const Frame& f, Deadline deadline);

}  // namespace fabkit::wire
