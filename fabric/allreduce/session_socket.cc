#include "fabric/allreduce/session_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <algorithm>
#include <cstring>
#include <thread>

#include "fabric/allreduce/allreduce_types.h"

namespace fabkit::fabric {
namespace {

using Clock = std::chrono::steady_clock;
constexpr char kMagic[4] = {'F', 'B', 'K', '1'};
constexpr size_t kHelloBytes = 4 + 4 + 4 + 8;
constexpr size_t kVerdictBytes = 4 + 1 + 4 + 4 + 8;
enum Verdict : uint8_t { kOk = 0, kWrongToken = 1, kPlanMismatch = 2, kBadHello = 3 };

std::string errno_text(int err) { return std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")"; }

int remaining_ms(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms < 0 ? 0 : static_cast<int>(ms);
}

sockaddr_in make_addr(const std::string& addr, uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  if (addr.empty()) {
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
  } else if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) {
    throw PeerError("io_error", "address '" + addr + "' is not an IPv4 address; give the interface's IPv4 address");
  }
  return sa;
}

void put_u32(char* p, uint32_t v) { for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i)); }
void put_u64(char* p, uint64_t v) { for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i)); }
uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

bool token_equal(const std::string& a, const std::string& b) {
  // Constant time over the expected length: the comparison must not leak how many bytes matched.
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

void bind_device(int fd, const std::string& ifname) {
  if (ifname.empty()) return;
  // Needs CAP_NET_RAW; without it the address binding still picks the source address, so an
  // unprivileged agent goes on (the route decides the egress interface, which the probe checks).
  setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname.c_str(), static_cast<socklen_t>(ifname.size()));
}

void send_verdict(int fd, Verdict v, const HelloInfo& mine, int timeout_ms) {
  char buf[kVerdictBytes];
  std::memcpy(buf, kMagic, 4);
  buf[4] = static_cast<char>(v);
  put_u32(buf + 5, mine.rank);
  put_u32(buf + 9, mine.world);
  put_u64(buf + 13, mine.plan_digest);
  try {
    send_all(fd, buf, sizeof buf, timeout_ms, "sending the handshake verdict");
  } catch (const PeerError&) {
    // A rejected connector that already left does not matter.
    if (v == kOk) throw;
  }
}

}  // namespace

void set_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    throw PeerError("io_error", "fcntl(O_NONBLOCK): " + errno_text(errno));
}

uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string tune_data_socket(int fd, int buffer_bytes) {
  int one = 1;
  std::string note;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
    note += "TCP_NODELAY: " + errno_text(errno) + "; ";
  if (buffer_bytes > 0) {
    // Setting a size switches off autotuning and is capped by net.core.{w,r}mem_max; the FORCE
    // variants (CAP_NET_ADMIN) lift that cap, so try them first.
    for (auto [force, plain, name] : {std::tuple{SO_SNDBUFFORCE, SO_SNDBUF, "SO_SNDBUF"},
                                      std::tuple{SO_RCVBUFFORCE, SO_RCVBUF, "SO_RCVBUF"}}) {
      if (setsockopt(fd, SOL_SOCKET, force, &buffer_bytes, sizeof buffer_bytes) != 0 &&
          setsockopt(fd, SOL_SOCKET, plain, &buffer_bytes, sizeof buffer_bytes) != 0)
        note += std::string(name) + ": " + errno_text(errno) + "; ";
    }
  }
  return note;
}

void send_all(int fd, const void* data, size_t len, int timeout_ms, const std::string& what) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pfd{fd, POLLOUT, 0};
      int rc = ::poll(&pfd, 1, timeout_ms);
      if (rc == 0) throw PeerError("peer_timeout", "peer accepted no data for " + std::to_string(timeout_ms) + " ms while " + what);
      if (rc < 0 && errno != EINTR) throw PeerError("io_error", "poll while " + what + ": " + errno_text(errno));
      continue;
    }
    int err = errno;
    if (err == EPIPE || err == ECONNRESET)
      throw PeerError("peer_closed", "peer closed the connection while " + what + " (the peer process died or gave up)");
    throw PeerError("io_error", "send while " + what + ": " + errno_text(err));
  }
}

void recv_all(int fd, void* data, size_t len, int timeout_ms, const std::string& what) {
  char* p = static_cast<char*>(data);
  while (len > 0) {
    ssize_t n = ::recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) throw PeerError("peer_closed", "peer closed the connection while " + what + " (the peer process died or gave up)");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd pfd{fd, POLLIN, 0};
      int rc = ::poll(&pfd, 1, timeout_ms);
      if (rc == 0) throw PeerError("peer_timeout", "no data from peer for " + std::to_string(timeout_ms) + " ms while " + what);
      if (rc < 0 && errno != EINTR) throw PeerError("io_error", "poll while " + what + ": " + errno_text(errno));
      continue;
    }
    int err = errno;
    if (err == ECONNRESET) throw PeerError("peer_closed", "peer reset the connection while " + what + " (the peer process died)");
    throw PeerError("io_error", "recv while " + what + ": " + errno_text(err));
  }
}

Fd listen_on(const std::string& addr, uint16_t port, const std::string& ifname) {
  sockaddr_in sa = make_addr(addr, port);
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) throw PeerError("io_error", "socket: " + errno_text(errno));
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  bind_device(fd.get(), ifname);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
    throw PeerError("io_error", "bind " + addr + ":" + std::to_string(port) + ": " + errno_text(errno) +
                                    " (is the address on this host and the port free? choose another with --port)");
  if (::listen(fd.get(), 16) != 0) throw PeerError("io_error", "listen " + addr + ":" + std::to_string(port) + ": " + errno_text(errno));
  return fd;
}

Fd accept_peer(int listen_fd, const std::string& token, const HelloInfo& mine, int timeout_ms, HelloInfo* peer) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  int rejected = 0;
  std::string last_rejection;
  for (;;) {
    int left = remaining_ms(deadline);
    pollfd pfd{listen_fd, POLLIN, 0};
    int rc = left > 0 ? ::poll(&pfd, 1, left) : 0;
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) {
      std::string msg = "no peer presented the session token within " + std::to_string(timeout_ms) + " ms";
      if (rejected > 0) msg += " (" + std::to_string(rejected) + " connection(s) rejected: " + last_rejection + ")";
      else msg += " (nothing connected: is the peer running, and is the port open?)";
      throw PeerError(rejected > 0 ? "token_rejected" : "accept_timeout", msg);
    }
    Fd conn(::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!conn) continue;
    // A connector gets at most 2 s to present token and hello: a silent one (a port scanner, a
    // stale client) must not hold the accept loop until the deadline while the real peer waits.
    int step_ms = std::max(1, std::min(2000, remaining_ms(deadline)));
    std::string got(token.size(), '\0');
    char hello[kHelloBytes];
    try {
      recv_all(conn.get(), got.data(), got.size(), step_ms, "reading the session token");
      if (!token_equal(got, token)) {
        ++rejected;
        last_rejection = "wrong session token";
        send_verdict(conn.get(), kWrongToken, mine, 100);
        continue;
      }
      recv_all(conn.get(), hello, sizeof hello, step_ms, "reading the hello");
    } catch (const PeerError& e) {
      ++rejected;
      last_rejection = e.what();
      continue;
    }
    if (std::memcmp(hello, kMagic, 4) != 0) {
      ++rejected;
      last_rejection = "not a fabkit hello";
      send_verdict(conn.get(), kBadHello, mine, 100);
      continue;
    }
    HelloInfo theirs{get_u32(hello + 4), get_u32(hello + 8), get_u64(hello + 12)};
    if (peer) *peer = theirs;
    if (theirs.world != mine.world || theirs.plan_digest != mine.plan_digest) {
      send_verdict(conn.get(), kPlanMismatch, mine, 100);
      throw PeerError("plan_mismatch", "peer rank " + std::to_string(theirs.rank) + " runs a different plan (world " +
                                           std::to_string(theirs.world) + " vs " + std::to_string(mine.world) +
                                           ", or other sizes/iterations/collective): start both sides with the same options");
    }
    send_verdict(conn.get(), kOk, mine, step_ms);
    return conn;
  }
}

Fd connect_peer(const std::string& peer_addr, uint16_t port, const std::string& local_addr, const std::string& ifname,
                const std::string& token, const HelloInfo& mine, int timeout_ms, HelloInfo* peer) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  sockaddr_in dst = make_addr(peer_addr, port);
  std::string where = peer_addr + ":" + std::to_string(port);
  std::string last_error = "no attempt";
  Fd fd;
  while (!fd) {
    if (remaining_ms(deadline) <= 0)
      throw PeerError("connect_failed", "could not connect to " + where + " within " + std::to_string(timeout_ms) +
                                            " ms: " + last_error + " (is the peer up, listening, and the port not blocked?)");
    Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!s) throw PeerError("io_error", "socket: " + errno_text(errno));
    bind_device(s.get(), ifname);
    if (!local_addr.empty()) {
      sockaddr_in src = make_addr(local_addr, 0);
      if (::bind(s.get(), reinterpret_cast<sockaddr*>(&src), sizeof src) != 0)
        throw PeerError("io_error", "bind " + local_addr + ": " + errno_text(errno) + " (is that address on this host?)");
    }
    int rc = ::connect(s.get(), reinterpret_cast<sockaddr*>(&dst), sizeof dst);
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      pollfd pfd{s.get(), POLLOUT, 0};
      int prc = ::poll(&pfd, 1, std::max(1, remaining_ms(deadline)));
      if (prc == 0) {
        last_error = "connect timed out (packets dropped: firewall or wrong route?)";
        continue;
      }
      socklen_t len = sizeof err;
      getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    }
    if (err == 0) {
      fd = std::move(s);
      break;
    }
    last_error = errno_text(err);
    // Refused means nothing listens yet: the peer may still be starting, so retry until the deadline.
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50, remaining_ms(deadline) + 1)));
  }
  char hello[kHelloBytes];
  std::memcpy(hello, kMagic, 4);
  put_u32(hello + 4, mine.rank);
  put_u32(hello + 8, mine.world);
  put_u64(hello + 12, mine.plan_digest);
  int left = std::max(1, remaining_ms(deadline));
  send_all(fd.get(), token.data(), token.size(), left, "sending the session token to " + where);
  send_all(fd.get(), hello, sizeof hello, left, "sending the hello to " + where);
  char verdict[kVerdictBytes];
  try {
    recv_all(fd.get(), verdict, sizeof verdict, std::max(1, remaining_ms(deadline)), "waiting for the handshake verdict from " + where);
  } catch (const PeerError& e) {
    if (e.kind() == "peer_closed")
      throw PeerError("token_rejected", where + " closed the connection without accepting the session token");
    throw;
  }
  if (std::memcmp(verdict, kMagic, 4) != 0) throw PeerError("io_error", where + " is not a fabkit peer (bad handshake magic)");
  HelloInfo theirs{get_u32(verdict + 5), get_u32(verdict + 9), get_u64(verdict + 13)};
  if (peer) *peer = theirs;
  switch (static_cast<uint8_t>(verdict[4])) {
    case kOk: return fd;
    case kWrongToken: throw PeerError("token_rejected", where + " rejected our session token (a different session, or a stale agent on that port)");
    case kPlanMismatch: throw PeerError("plan_mismatch", where + " runs a different plan (sizes/iterations/collective): start both sides with the same options");
    default: throw PeerError("io_error", where + " rejected our hello as malformed");
  }
}

}  // namespace fabkit::fabric
