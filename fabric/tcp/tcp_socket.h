// TCP sockets bound to a chosen address, with a connect that never waits longer than asked and
// says why it failed in the words an operator uses: a firewall that drops SYNs makes a connect
// time out ("blocked"); a host that answers RST means nothing listens or a reject rule ("closed");
// no route ("unreachable").
#pragma once

#include <cstdint>
#include <string>

#include "fabric/wire/socket_io.h"

namespace fabkit::tcp {

enum class ConnectStatus { kOpen, kBlocked, kClosed, kUnreachable, kError };
const char* to_string(ConnectStatus s);  // "open", "blocked", "closed", "unreachable", "error"
ConnectStatus classify_connect_errno(int err);  // ETIMEDOUT -> blocked, ECONNREFUSED -> closed...

struct ConnectResult {
  ConnectStatus status = ConnectStatus::kError;
  wire::Fd fd;            // valid when kOpen
  double connect_time_us = 0;
  int err = 0;            // errno when not open (ETIMEDOUT for our own deadline)
  bool bound_to_device = false;
  std::string failed_call;  // "socket", "SO_BINDTODEVICE", "bind", "connect", "poll" when not open
  std::string message;    // "connect 198.18.0.2:29400 from 198.18.0.1: Connection refused"
};

// Listens on addr:port (port 0 = ephemeral). Throws wire::WireError kIo naming addr, port, errno.
// ifname (optional) pins the socket to that interface (SO_BINDTODEVICE), so a SYN that arrives on
// another interface for the same address is refused instead of silently measured.
wire::Fd listen_tcp(const std::string& addr, uint16_t port, int backlog = 64,
                    const std::string& ifname = "");
uint16_t local_port(int fd);

// SO_BINDTODEVICE; false with errno set when the kernel refuses (before Linux 5.7 it needs
// CAP_NET_RAW) or the name is not an interface name. listen_tcp and connect_tcp treat that as a
// failure naming the interface and errno: a socket meant for one interface never silently uses
// another.
bool bind_to_device(int fd, const std::string& ifname);
// Non-blocking connect bounded by timeout_ms; bind_addr (optional, "" = any) pins the source
// interface so each candidate interface pair is measured on its own path.
// bind_ifname (optional) pins the route to that interface: without it Linux would happily send a
// connection "from" one interface's address out of another (weak host model).
ConnectResult connect_tcp(const std::string& addr, uint16_t port, const std::string& bind_addr,
                          int timeout_ms, const std::string& bind_ifname = "");

// Accepts one connection, waiting until deadline. Throws kTimeout.
wire::Fd accept_until(int listen_fd, wire::Deadline deadline);

void set_nodelay(int fd);

}  // namespace fabkit::tcp
