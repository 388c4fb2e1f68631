#include "fabric/wire/socket_io.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fabric/wire/wire_error.h"

namespace fabkit::wire {

int ms_left(Deadline d) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(d - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(std::min<long long>(left, INT_MAX));  // kNoDeadline: INT_MAX
}

int poll_until(pollfd* fds, size_t n, Deadline deadline, const char* what) {
  for (;;) {
    int timeout = -1;
    if (deadline != kNoDeadline) {
      // Rounded up, so a wait never returns early with time still left.
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
      timeout = left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, INT_MAX));
    }
    int r = ::poll(fds, static_cast<nfds_t>(n), timeout);
    if (r > 0) return r;  // readable, writable, or an error/hangup the next call will report
    if (r == 0 && Clock::now() >= deadline) return 0;
    if (r < 0 && errno != EINTR)
      throw WireError(WireErrorKind::kIo, std::string("poll on ") + what + ": " + std::strerror(errno));
  }
}

void wait_fd(int fd, short events, Deadline deadline, const char* what) {
  pollfd p{fd, events, 0};
  if (poll_until(&p, 1, deadline, what) == 0)
    throw WireError(WireErrorKind::kTimeout, std::string("deadline passed waiting for ") + what);
}

// Both loops try the call first and wait only when the socket has nothing to give or no room:
// a hot connection costs one syscall per chunk. The deadline is the caller's, fixed before the
// first byte, so a peer that trickles a byte at a time still runs out of time.
void read_exact(int fd, void* buf, size_t n, Deadline deadline, const char* what) {
  auto* p = static_cast<char*>(buf);
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::recv(fd, p + got, n - got, MSG_DONTWAIT);
    if (r > 0) {
      got += static_cast<size_t>(r);
    } else if (r == 0) {
      if (got == 0) throw WireError(WireErrorKind::kClosed, std::string("peer closed ") + what);
      throw WireError(WireErrorKind::kTruncated, std::string("peer closed ") + what + " after " +
                                                     std::to_string(got) + " of " +
                                                     std::to_string(n) + " bytes");
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      wait_fd(fd, POLLIN, deadline, what);
    } else if (errno != EINTR) {
      if (errno == ECONNRESET && got == 0)
        throw WireError(WireErrorKind::kClosed, std::string("peer reset ") + what);
      throw WireError(WireErrorKind::kIo, std::string("recv on ") + what + ": " + std::strerror(errno));
    }
    if (got < n && Clock::now() >= deadline)
      throw WireError(WireErrorKind::kTimeout, std::string("no complete ") + what + " before the deadline (" +
                                                   std::to_string(got) + " of " + std::to_string(n) + " bytes)");
  }
}

void write_all(int fd, const void* buf, size_t n, Deadline deadline, const char* what) {
  auto* p = static_cast<const char*>(buf);
  size_t sent = 0;
  while (sent < n) {
    ssize_t r = ::send(fd, p + sent, n - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (r > 0) {
      sent += static_cast<size_t>(r);
    } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      wait_fd(fd, POLLOUT, deadline, what);
    } else if (r < 0 && errno != EINTR) {
      if (errno == EPIPE || errno == ECONNRESET)
        throw WireError(WireErrorKind::kClosed, std::string("peer closed ") + what);
      throw WireError(WireErrorKind::kIo, std::string("send on ") + what + ": " + std::strerror(errno));
    }
    if (sent < n && Clock::now() >= deadline)
      throw WireError(WireErrorKind::kTimeout, std::string("peer took no complete ") + what + " before the deadline (" +
                                                   std::to_string(sent) + " of " + std::to_string(n) + " bytes)");
  }
}

Frame read_frame(int fd, Deadline deadline, uint32_t max_payload_bytes) {
  unsigned char header[kFrameHeaderBytes];
  read_exact(fd, header, sizeof header, deadline, "frame header");
  uint32_t len = check_header(header, max_payload_bytes);  // before allocating the payload
  Frame f;
  f.type = static_cast<FrameType>(header[4]);
  f.payload.resize(len);
  try {
    if (len > 0) read_exact(fd, f.payload.data(), len, deadline, "frame payload");
  } catch (const WireError& e) {
    if (e.kind() == WireErrorKind::kClosed)
      throw WireError(WireErrorKind::kTruncated, "peer closed after a frame header announcing " +
                                                     std::to_string(len) + " bytes");
    throw;
  }
  return f;
}

void write_frame(int fd, const Frame& f, Deadline deadline) {
  std::string bytes = encode_frame(f);
  write_all(fd, bytes.data(), bytes.size(), deadline, "frame");
}

}  // namespace fabkit::wire
