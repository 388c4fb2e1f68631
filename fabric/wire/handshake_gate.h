// The accept side of every authenticated listener (the agent's control port, the TCP test
// servers, the RDMA endpoint channel, the all-reduce / Gloo store / NCCL rendezvous). One loop,
// no thread per connection: it accepts every connection as soon as it arrives and runs each
// handshake as a non-blocking state machine (ServerHandshake over a FrameDecoder) under its own
// absolute deadline from accept. Pending handshakes are capped; at the cap the *oldest* pending
// one is closed to make room, never the new arrival. So a slow-loris client (silent, or trickling
// a byte at a time) costs one slot until its deadline or until newer connections push it out, and
// a real peer, whose handshake takes a round trip or two, is admitted unless `max_pending` newer
// connections arrive while it runs. Running out of descriptors (EMFILE) evicts the same way.
//
// next() does the work: call it whenever the caller waits for a peer. Between calls nothing is
// read; pending connections keep their deadlines.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "fabric/wire/handshake.h"
#include "fabric/wire/socket_io.h"

namespace fabkit::wire {

struct GateLimits {
  int max_pending = 1024;           // handshakes in flight at once; the oldest goes at the cap
  int handshake_timeout_ms = 5000;  // each connection's one deadline, from its accept
};

// What one listener's handshakes check: ServerHandshake's arguments, and an optional check of the
// client's claims once its proof verified (e.g. the all-reduce hello's fields). check_claims
// throws WireError; the client then receives it as an error frame and the connection is closed.
struct GateServer {
  std::string token;
  std::string role;  // "agent" | "peer"
  std::function<bool(const std::string& purpose)> purpose_ok;
  std::function<void(const PeerClaims&)> check_claims;
};

struct Admitted {
  Fd fd;  // blocking mode, as accept(2) gives it; the caller sends welcome_frame(claims, ...)
  PeerClaims claims;
};

class HandshakeGate {
 public:
  // Called for refused connections (rate-limited: the first few, then every 100th); may be empty.
  using Log = std::function<void(const std::string&)>;

  // Makes listen_fd non-blocking; the caller keeps owning it and must keep it open while the gate
  // lives.
  HandshakeGate(int listen_fd, GateServer server, GateLimits limits, Log log = {});
  ~HandshakeGate();
  HandshakeGate(const HandshakeGate&) = delete;
  HandshakeGate& operator=(const HandshakeGate&) = delete;

  // Accepts and handshakes until a connection is admitted or `deadline` passes (nullopt).
  // Throws WireError kIo when the listener itself fails.
  std::optional<Admitted> next(Deadline deadline);

  // Closes every pending handshake and admitted connection nobody took. The destructor does too.
  void stop();

  // Connections refused so far: wrong token, malformed, timed out, closed, evicted. Readable from
  // any thread.
  int rejected() const { return rejected_.load(); }
  int evicted() const { return evicted_.load(); }  // of those, pushed out at the cap
  std::string last_rejection() const;

 private:
  struct Pending;
  void accept_ready();
  void evict_oldest(const std::string& why);
  // Reads what the socket has and advances its handshake; false when it is finished (admitted
  // or refused) and must leave the pending list.
  bool service(Pending& p);
  bool flush(Pending& p);  // false when the peer is gone
  void refuse(Pending& p, const std::string& why, const std::string& error_code = {},
              const std::string& error_message = {});
  void expire_overdue();
  void note_rejection(const std::string& why);

  int listen_fd_;
  GateServer server_;
  GateLimits limits_;
  Log log_;
  std::list<std::unique_ptr<Pending>> pending_;  // in accept order: front is the oldest
  std::list<Admitted> admitted_;
  std::atomic<int> rejected_{0}, evicted_{0};
  mutable std::mutex why_mu_;
  std::string last_rejection_;
};

}  // namespace fabkit::wire
