#include "trainer/serve/http/connection_watch.h"

#include <dirent.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <memory>

namespace fabkit::serve {
namespace {

// The port of a socket address, and its host as getnameinfo writes it numerically (as httplib
// does for Request::remote_addr).
bool address_of(const sockaddr_storage& a, socklen_t len, std::string& host, int& port) {
  char buf[NI_MAXHOST];
  char serv[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, buf, sizeof buf, serv, sizeof serv,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  host = buf;
  port = std::atoi(serv);
  return true;
}

bool matches(int fd, const std::string& remote_addr, int remote_port, int local_port) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  std::string host;
  int port = -1;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
      !address_of(a, len, host, port) || port != local_port)
    return false;
  len = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
      !address_of(a, len, host, port))
    return false;
  return port == remote_port && host == remote_addr;
}

}  // namespace

std::optional<ConnectionWatch> ConnectionWatch::find(const std::string& remote_addr,
                                                     int remote_port, int local_port) {
  if (remote_port <= 0 || local_port <= 0) return std::nullopt;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir("/proc/self/fd"), closedir);
  if (!dir) return std::nullopt;
  const int own = dirfd(dir.get());
  while (const dirent* e = readdir(dir.get())) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == own) continue;
    if (matches(static_cast<int>(fd), remote_addr, remote_port, local_port))
      return ConnectionWatch(static_cast<int>(fd));
  }
  return std::nullopt;
}

bool ConnectionWatch::peer_closed() const {
  char c;
  const ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;
  if (n == 0) return true;
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace fabkit::serve
