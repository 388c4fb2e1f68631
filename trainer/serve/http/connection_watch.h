// Whether the client of a request is still connected, for a handler that waits before it answers
// (a whole, non-streamed completion): a client that gave up must free its slot in the batch, not
// hold it until max_tokens.
//
// Why by hand: httplib 0.11 (Debian 12's) hands a handler the request but not its connection
// (later versions have Request::is_connection_closed). The connection's socket is found among the
// process's open descriptors by its two addresses, which are unique among live connections, and
// is then only peeked at, never read or closed: httplib still owns it.
#pragma once

#include <optional>
#include <string>

namespace fabkit::serve {

class ConnectionWatch {
 public:
  // The socket whose local port is local_port and whose peer is remote_addr:remote_port (the
  // address as httplib writes it: getnameinfo's numeric host); nullopt when none is open.
  static std::optional<ConnectionWatch> find(const std::string& remote_addr, int remote_port,
                                             int local_port);

  // True once the peer has closed its side or reset the connection. Bytes waiting to be read (a
  // pipelined request) count as a client that is still there.
  bool peer_closed() const;

  int fd() const { return fd_; }

 private:
  explicit ConnectionWatch(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace fabkit::serve
