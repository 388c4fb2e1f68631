// Blocking-with-deadline socket I/O. Every read and write waits in poll() with the time left
// until an absolute deadline, so no network wait in fabkit can hang (DESIGN.md: every wait has a
// timeout). Errors are WireError with a name: kTimeout, kClosed, kTruncated, kIo.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "fabric/wire/frame.h"

namespace fabkit::wire {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

inline Deadline deadline_in_ms(int timeout_ms) {
  return Clock::now() + std::chrono::milliseconds(timeout_ms);
}
int ms_left(Deadline d);  // >= 0

// Owns a file descriptor; closes it once.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { int f = fd_; fd_ = -1; return f; }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Waits until fd is readable (events = POLLIN) or writable (POLLOUT). Throws kTimeout.
void wait_fd(int fd, short events, Deadline deadline, const char* what);

// Reads exactly n bytes. EOF before the first byte -> kClosed, EOF after -> kTruncated.
void read_exact(int fd, void* buf, size_t n, Deadline deadline, const char* what);
void write_all(int fd, const void* buf, size_t n, Deadline deadline, const char* what);

Frame read_frame(int fd, Deadline deadline, uint32_t max_payload_bytes = kMaxControlFrameBytes);
void write_frame(int fd, const Frame& f, Deadline deadline);

}  // namespace fabkit::wire
