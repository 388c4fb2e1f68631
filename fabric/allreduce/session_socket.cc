#include "fabric/allreduce/session_socket.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>
#include <tuple>

#include "fabric/allreduce/allreduce_types.h"
#include "fabric/tcp/tcp_socket.h"
#include "fabric/wire/handshake.h"
#include "fabric/wire/handshake_gate.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::fabric {
namespace {

using wire::WireError;
using wire::WireErrorKind;

// A connector gets at most this long to complete the handshake, beside every other one: a silent
// one (a port scanner, a stale client) holds only its own slot, never the real peer.
constexpr int kHandshakeStepMs = 2000;
// Handshakes in flight at once on one listener; at the cap the oldest is closed to make room
// (wire/handshake_gate.h), so this bounds descriptors, not who gets in.
constexpr int kMaxPendingHandshakes = 256;
constexpr char kPurpose[] = "allreduce";

std::string errno_text(int err) { return std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")"; }

Json hello_json(const HelloInfo& h) {
  return {{"rank", h.rank}, {"world", h.world}, {"plan_digest", h.plan_digest}};
}

// The peer's {rank, world, plan_digest}; throws WireError kBadMessage naming the bad field.
HelloInfo hello_from(const Json& j) {
  auto u = [&](const char* f, uint64_t max) {
    auto it = j.find(f);
    if (it == j.end() || !it->is_number_unsigned() || it->get<uint64_t>() > max)
      throw WireError(WireErrorKind::kBadMessage, std::string("hello field '") + f + "' must be an integer 0.." +
                                                      std::to_string(max));
    return it->get<uint64_t>();
  };
  return {static_cast<uint32_t>(u("rank", UINT32_MAX)), static_cast<uint32_t>(u("world", UINT32_MAX)),
          u("plan_digest", UINT64_MAX)};
}

// Socket-layer errors in the runners' vocabulary (PeerError kinds).
[[noreturn]] void rethrow_as_peer_error(const WireError& e, const std::string& what, int timeout_ms) {
  switch (e.kind()) {
    case WireErrorKind::kTimeout:
      throw PeerError("peer_timeout", "no progress from the peer within " + std::to_string(timeout_ms) + " ms while " + what);
    case WireErrorKind::kClosed:
    case WireErrorKind::kTruncated:
      throw PeerError("peer_closed", "peer closed the connection while " + what + " (the peer process died or gave up)");
    default:
      throw PeerError("io_error", what + ": " + e.what());
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

// timeout_ms bounds the whole call (an absolute deadline), not each wait: a peer that trickles
// a byte at a time times out like a silent one.
void send_all(int fd, const void* data, size_t len, int timeout_ms, const std::string& what) {
  try {
    wire::write_all(fd, data, len, wire::deadline_in_ms(timeout_ms), what.c_str());
  } catch (const WireError& e) {
    rethrow_as_peer_error(e, what, timeout_ms);
  }
}

void recv_all(int fd, void* data, size_t len, int timeout_ms, const std::string& what) {
  try {
    wire::read_exact(fd, data, len, wire::deadline_in_ms(timeout_ms), what.c_str());
  } catch (const WireError& e) {
    rethrow_as_peer_error(e, what, timeout_ms);
  }
}

void send_frame(int fd, const wire::Frame& frame, wire::Deadline deadline, const std::string& what) {
  const int timeout_ms = wire::ms_left(deadline);
  try {
    wire::write_frame(fd, frame, deadline);
  } catch (const WireError& e) {
    rethrow_as_peer_error(e, what, timeout_ms);
  }
}

wire::Frame recv_frame(int fd, uint32_t max_payload_bytes, wire::Deadline deadline, const std::string& what) {
  const int timeout_ms = wire::ms_left(deadline);
  try {
    return wire::read_frame(fd, deadline, max_payload_bytes);
  } catch (const WireError& e) {
    rethrow_as_peer_error(e, what, timeout_ms);
  }
}

Fd listen_on(const std::string& addr, uint16_t port, const std::string& ifname) {
  try {
    Fd fd = tcp::listen_tcp(addr, port, 1024, ifname);
    set_nonblocking(fd.get());
    return fd;
  } catch (const WireError& e) {
    throw PeerError("io_error", std::string(e.what()) +
                                    " (is the address on this host and the port free? choose another with --port)");
  }
}

std::vector<AcceptedPeer> accept_peers(int listen_fd, size_t count, const std::string& token,
                                       const HelloInfo& mine, int timeout_ms) {
  auto deadline = wire::deadline_in_ms(timeout_ms);
  // Every connector handshakes at once with its own kHandshakeStepMs deadline
  // (wire/handshake_gate.h): a silent or trickling one never delays the real peers. A hello
  // with bad fields is refused there, by name.
  wire::HandshakeGate gate(listen_fd,
                           {token, "peer", [](const std::string& p) { return p == kPurpose; },
                            [](const wire::PeerClaims& c) { (void)hello_from(c.info); }},
                           {kMaxPendingHandshakes, kHandshakeStepMs});
  std::vector<AcceptedPeer> peers;
  while (peers.size() < count) {
    std::optional<wire::Admitted> a;
    try {
      a = gate.next(deadline);
    } catch (const WireError& e) {
      throw PeerError("io_error", e.what());
    }
    if (!a) {
      std::string msg = "no peer proved the session token within " + std::to_string(timeout_ms) + " ms";
      if (!peers.empty())
        msg += " (" + std::to_string(peers.size()) + " of " + std::to_string(count) + " did)";
      int rejected = gate.rejected();
      if (rejected > 0)
        msg += " (" + std::to_string(rejected) +
               " connection(s) rejected: " + gate.last_rejection() + ")";
      else msg += " (nothing connected: is the peer running, and is the port open?)";
      throw PeerError(rejected > 0 ? "token_rejected" : "accept_timeout", msg);
    }
    HelloInfo theirs = hello_from(a->claims.info);
    int conn = a->fd.get();
    if (theirs.world != mine.world || theirs.plan_digest != mine.plan_digest) {
      wire::send_error_frame(conn, "plan_mismatch",
                             "world " + std::to_string(mine.world) + ", plan digest " +
                                 std::to_string(mine.plan_digest));
      throw PeerError("plan_mismatch", "peer rank " + std::to_string(theirs.rank) + " runs a different plan (world " +
                                           std::to_string(theirs.world) + " vs " + std::to_string(mine.world) +
                                           ", or other sizes/iterations/collective): start both sides with the same options");
    }
    set_nonblocking(conn);
    try {
      wire::write_frame(conn, wire::welcome_frame(a->claims, hello_json(mine)),
                        std::min(deadline, wire::deadline_in_ms(kHandshakeStepMs)));
    } catch (const WireError& e) {
      rethrow_as_peer_error(e, "sending the handshake verdict", kHandshakeStepMs);
    }
    peers.push_back({std::move(a->fd), theirs});
  }
  return peers;
}

Fd accept_peer(int listen_fd, const std::string& token, const HelloInfo& mine, int timeout_ms,
               HelloInfo* peer) {
  std::vector<AcceptedPeer> one = accept_peers(listen_fd, 1, token, mine, timeout_ms);
  if (peer) *peer = one.front().hello;
  return std::move(one.front().fd);
}

Fd connect_peer(const std::string& peer_addr, uint16_t port, const std::string& local_addr, const std::string& ifname,
                const std::string& token, const HelloInfo& mine, int timeout_ms, HelloInfo* peer) {
  auto deadline = wire::deadline_in_ms(timeout_ms);
  std::string where = peer_addr + ":" + std::to_string(port);
  std::string last_error = "no attempt";
  Fd fd;
  while (!fd) {
    int left = wire::ms_left(deadline);
    if (left <= 0)
      throw PeerError("connect_failed", "could not connect to " + where + " within " + std::to_string(timeout_ms) +
                                            " ms: " + last_error + " (is the peer up, listening, and the port not blocked?)");
    tcp::ConnectResult c = tcp::connect_tcp(peer_addr, port, local_addr, left, ifname);
    if (c.status == tcp::ConnectStatus::kOpen) {
      fd = std::move(c.fd);
      break;
    }
    // Our own socket setup failing is not worth a retry; the peer not listening yet is.
    if (c.failed_call == "socket" || c.failed_call == "SO_BINDTODEVICE" || c.failed_call == "bind")
      throw PeerError("io_error", c.message + " (is that address and interface on this host?)");
    last_error = c.status == tcp::ConnectStatus::kBlocked ? "connect timed out (packets dropped: firewall or wrong route?)"
                                                          : c.message;
    // Refused means nothing listens yet: the peer may still be starting, so retry until the deadline.
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50, wire::ms_left(deadline) + 1)));
  }
  try {
    Json info = wire::client_handshake(fd.get(), token, "peer", kPurpose, hello_json(mine), deadline);
    HelloInfo theirs = hello_from(info);
    if (peer) *peer = theirs;
    return fd;
  } catch (const WireError& e) {
    switch (e.kind()) {
      case WireErrorKind::kImpostor:
      case WireErrorKind::kBadToken:
        throw PeerError("token_rejected", where + " and this side do not share the session token (a different "
                                                  "session, or a stale agent on that port): " + e.what());
      case WireErrorKind::kRejected:
        if (std::string(e.what()).find("plan_mismatch") != std::string::npos)
          throw PeerError("plan_mismatch", where + " runs a different plan (sizes/iterations/collective): start both "
                                                   "sides with the same options");
        throw PeerError("io_error", where + " refused the connection: " + e.what());
      case WireErrorKind::kClosed:
      case WireErrorKind::kTruncated:
        throw PeerError("token_rejected", where + " closed the connection during the handshake: " + e.what());
      case WireErrorKind::kTimeout:
        throw PeerError("peer_timeout", "handshake with " + where + ": " + e.what());
      default:
        throw PeerError("io_error", "handshake with " + where + ": " + e.what());
    }
  }
}

}  // namespace fabkit::fabric
