// The accept side of every authenticated listener (the agent's control port, the RDMA endpoint
// channel, the all-reduce / Gloo store / NCCL rendezvous): each accepted connection runs its
// handshake in its own thread under one absolute deadline, at most `max_pending` at once. A
// slow-loris client (silent, or trickling a byte at a time) therefore costs one slot for one
// deadline and delays nobody; connections over the cap are closed at once. Handshakes that
// succeed queue up in arrival order for next().
#pragma once

#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fabric/wire/handshake.h"
#include "fabric/wire/socket_io.h"

namespace fabkit::wire {

struct GateLimits {
  int max_pending = 32;             // handshakes in flight at once
  int handshake_timeout_ms = 5000;  // each connection's one deadline, from its accept
};

struct Admitted {
  Fd fd;
  PeerClaims claims;
};

class HandshakeGate {
 public:
  // Runs the server side of one handshake on a fresh connection by `deadline` and returns the
  // peer's claims, or throws WireError (the connection is then closed and counted as rejected).
  // It runs on the gate's threads: it must not touch the caller's state without a lock.
  using Handshake = std::function<PeerClaims(int fd, Deadline deadline)>;
  // Called from the gate's threads for each refused connection; may be empty.
  using Log = std::function<void(const std::string&)>;

  // Makes listen_fd non-blocking (a connection reset between poll and accept must not block the
  // loop); the caller keeps owning it and must keep it open while the gate lives.
  HandshakeGate(int listen_fd, Handshake handshake, GateLimits limits, Log log = {});
  ~HandshakeGate();
  HandshakeGate(const HandshakeGate&) = delete;
  HandshakeGate& operator=(const HandshakeGate&) = delete;

  // Accepts and handshakes until an admitted connection is ready or `deadline` passes (nullopt).
  // Throws WireError kIo when the listener itself fails.
  std::optional<Admitted> next(Deadline deadline);

  // Cuts off every pending handshake (shutdown makes its reads fail at once), joins the threads
  // and closes admitted connections nobody took. The destructor does this too.
  void stop();

  int rejected() const;
  std::string last_rejection() const;

 private:
  void accept_one();
  void handshake(Fd conn);
  void reap_finished();  // under mu_

  int listen_fd_;
  Handshake handshake_;
  GateLimits limits_;
  Log log_;
  Fd wake_;  // eventfd: a handshake succeeded, next() re-checks the queue

  mutable std::mutex mu_;
  std::vector<int> pending_;
  std::list<Admitted> admitted_;
  bool stopping_ = false;
  int rejected_ = 0;
  std::string last_rejection_;
  std::list<std::thread> threads_;
  std::vector<std::thread::id> finished_;
};

}  // namespace fabkit::wire
