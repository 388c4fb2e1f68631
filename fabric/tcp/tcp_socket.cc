#include "fabric/tcp/tcp_socket.h"

#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fabric/wire/wire_error.h"

namespace fabkit::tcp {
namespace {

using wire::WireError;
using wire::WireErrorKind;

sockaddr_in make_addr(const std::string& addr, uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  if (addr.empty()) {
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
  } else if (::inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) {
    throw WireError(WireErrorKind::kBadMessage, "'" + addr + "' is not an IPv4 address");
  }
  return sa;
}

std::string endpoint(const std::string& addr, uint16_t port) {
  return (addr.empty() ? std::string("0.0.0.0") : addr) + ":" + std::to_string(port);
}

}  // namespace

const char* to_string(ConnectStatus s) {
  switch (s) {
    case ConnectStatus::kOpen: return "open";
    case ConnectStatus::kBlocked: return "blocked";
    case ConnectStatus::kClosed: return "closed";
    case ConnectStatus::kUnreachable: return "unreachable";
    case ConnectStatus::kError: return "error";
  }
  return "error";
}

ConnectStatus classify_connect_errno(int err) {
  switch (err) {
    case 0: return ConnectStatus::kOpen;
    case ETIMEDOUT: return ConnectStatus::kBlocked;  // SYNs dropped: a firewall DROP rule
    case ECONNREFUSED:
    case ECONNRESET: return ConnectStatus::kClosed;  // RST: nothing listening or REJECT
    case ENETUNREACH:
    case EHOSTUNREACH:
    case EADDRNOTAVAIL:
    case ENETDOWN:
    case EHOSTDOWN: return ConnectStatus::kUnreachable;
    default: return ConnectStatus::kError;
  }
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool bind_to_device(int fd, const std::string& ifname) {
  if (ifname.empty() || ifname.size() >= IFNAMSIZ) {
    errno = EINVAL;
    return false;
  }
  return ::setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname.c_str(),
                      static_cast<socklen_t>(ifname.size())) == 0;
}

wire::Fd listen_tcp(const std::string& addr, uint16_t port, int backlog, const std::string& ifname) {
  wire::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) throw WireError(WireErrorKind::kIo, std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // A listener meant for one interface that silently listens on all would measure the wrong path.
  if (!ifname.empty() && !bind_to_device(fd.get(), ifname))
    throw WireError(WireErrorKind::kIo, "SO_BINDTODEVICE " + ifname + " for " + endpoint(addr, port) + ": " +
                                            std::strerror(errno));
  sockaddr_in sa = make_addr(addr, port);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
    throw WireError(WireErrorKind::kIo, "bind " + endpoint(addr, port) + ": " + std::strerror(errno));
  if (::listen(fd.get(), backlog) != 0)
    throw WireError(WireErrorKind::kIo, "listen " + endpoint(addr, port) + ": " + std::strerror(errno));
  return fd;
}

uint16_t local_port(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return 0;
  return ntohs(sa.sin_port);
}

ConnectResult connect_tcp(const std::string& addr, uint16_t port, const std::string& bind_addr,
                          int timeout_ms, const std::string& bind_ifname) {
  ConnectResult r;
  auto fail = [&](int err, const std::string& call) {
    r.err = err;
    r.failed_call = call.substr(0, call.find(' '));
    r.status = classify_connect_errno(err);
    r.message = call + " " + endpoint(addr, port) +
                (bind_addr.empty() ? std::string() : " from " + bind_addr) + ": " +
                (err == ETIMEDOUT ? "no answer within " + std::to_string(timeout_ms) + " ms"
                                  : std::string(std::strerror(err)));
    r.fd.reset();
    return std::move(r);
  };
  sockaddr_in dst = make_addr(addr, port);
  r.fd.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!r.fd.valid()) return fail(errno, "socket");
  if (!bind_ifname.empty()) {
    if (!bind_to_device(r.fd.get(), bind_ifname)) return fail(errno, "SO_BINDTODEVICE " + bind_ifname + " for");
    r.bound_to_device = true;
  }
  if (!bind_addr.empty()) {
    sockaddr_in src = make_addr(bind_addr, 0);
    if (::bind(r.fd.get(), reinterpret_cast<sockaddr*>(&src), sizeof src) != 0)
      return fail(errno, "bind");
  }
  auto t0 = wire::Clock::now();
  if (::connect(r.fd.get(), reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0) {
    if (errno != EINPROGRESS) return fail(errno, "connect");
    pollfd p{r.fd.get(), POLLOUT, 0};
    int pr = 0;
    try {
      pr = wire::poll_until(&p, 1, wire::deadline_in_ms(timeout_ms), "connect");
    } catch (const wire::WireError&) {
      return fail(errno, "poll");
    }
    if (pr == 0) return fail(ETIMEDOUT, "connect");
    int soerr = 0;
    socklen_t len = sizeof soerr;
    ::getsockopt(r.fd.get(), SOL_SOCKET, SO_ERROR, &soerr, &len);
    if (soerr != 0) return fail(soerr, "connect");
  }
  r.connect_time_us =
      std::chrono::duration<double, std::micro>(wire::Clock::now() - t0).count();
  r.status = ConnectStatus::kOpen;
  return r;
}

wire::Fd accept_until(int listen_fd, wire::Deadline deadline) {
  for (;;) {
    wire::wait_fd(listen_fd, POLLIN, deadline, "accept");
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) return wire::Fd(fd);
    if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
      throw WireError(WireErrorKind::kIo, std::string("accept: ") + std::strerror(errno));
  }
}

}  // namespace fabkit::tcp
