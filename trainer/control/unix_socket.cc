#include "trainer/control/unix_socket.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/errors.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::trainer::control {

sockaddr_un unix_address(const std::filesystem::path& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const std::string s = path.string();
  if (s.size() >= sizeof a.sun_path)
    throw UsageError("control socket path " + s + " is " + std::to_string(s.size()) +
                     " bytes, over the " + std::to_string(sizeof a.sun_path - 1) +
                     " a Unix socket allows: set FABTRAIN_CONTROL_DIR to a shorter directory");
  std::memcpy(a.sun_path, s.c_str(), s.size() + 1);
  return a;
}

UniqueFd connect_unix(const std::filesystem::path& path, int* err) {
  sockaddr_un a = unix_address(path);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) {
    *err = errno;
    return UniqueFd();
  }
  // A Unix connect completes or fails at once; non-blocking only turns a full backlog into EAGAIN
  // instead of a wait without a deadline.
  while (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (errno == EINTR) continue;
    *err = errno;
    return UniqueFd();
  }
  *err = 0;
  return fd;
}

Liveness probe_socket(const std::filesystem::path& path) {
  int err = 0;
  UniqueFd fd = connect_unix(path, &err);
  if (fd || err == EAGAIN) return Liveness::kAlive;
  return err == ENOENT ? Liveness::kMissing : Liveness::kRefused;
}

std::string read_line(int fd, size_t max_bytes, wire::Deadline deadline, const char* what) {
  using wire::WireError;
  using wire::WireErrorKind;
  std::string line;
  char buf[1024];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      line.append(buf, static_cast<size_t>(n));
      if (auto nl = line.find('\n'); nl != std::string::npos) return line.substr(0, nl);
      if (line.size() > max_bytes)
        throw WireError(WireErrorKind::kOversized,
                        std::string(what) + " longer than " + std::to_string(max_bytes) + " bytes");
    } else if (n == 0) {
      if (line.empty())
        throw WireError(WireErrorKind::kClosed, std::string("peer closed before ") + what);
      throw WireError(WireErrorKind::kTruncated,
                      std::string("peer closed in the middle of ") + what);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      wire::wait_fd(fd, POLLIN, deadline, what);
    } else if (errno != EINTR) {
      throw WireError(WireErrorKind::kIo,
                      std::string("recv of ") + what + ": " + std::strerror(errno));
    }
  }
}

}  // namespace fabkit::trainer::control
