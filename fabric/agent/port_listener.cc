#include "fabric/agent/port_listener.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fabric/tcp/tcp_socket.h"

namespace fabkit::agent {

PortListener::PortListener(const std::string& addr, uint16_t port)
    : fd_(tcp::listen_tcp(addr, port)) {
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      pollfd p{fd_.get(), POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      int c = ::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (c >= 0) {
        ++accepted_;
        ::close(c);
      }
    }
  });
}

PortListener::~PortListener() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

}  // namespace fabkit::agent
