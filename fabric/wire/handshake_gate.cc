#include "fabric/wire/handshake_gate.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "fabric/wire/frame.h"
#include "fabric/wire/messages.h"
#include "fabric/wire/session_key.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::wire {
namespace {

// accept(2): these report a connection that died before we took it, or a transient network
// condition; the listener itself is fine and the next connection may be real.
bool transient_accept_errno(int e) {
  return e == EINTR || e == ECONNABORTED || e == EPROTO || e == ENETDOWN || e == ENOPROTOOPT ||
         e == EHOSTDOWN || e == ENONET || e == EHOSTUNREACH || e == EOPNOTSUPP ||
         e == ENETUNREACH || e == EPERM;
}

// Out of descriptors or memory: a flood of connections can cause this, and ending the session
// would hand the flooder a win. The oldest pending handshake is closed to free a descriptor.
bool exhausted_errno(int e) { return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM; }

// Connections taken per wake-up before the pending ones are serviced again, so a flood of new
// connections cannot starve the handshakes already under way.
constexpr int kAcceptsPerRound = 256;
// Rejection lines logged one by one; after that one line per this many.
constexpr int kLoggedRejections = 8;
constexpr int kLogEvery = 100;

void set_blocking(int fd, bool blocking) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags >= 0) (void)::fcntl(fd, F_SETFL, blocking ? flags & ~O_NONBLOCK : flags | O_NONBLOCK);
}

}  // namespace

struct HandshakeGate::Pending {
  Pending(Fd f, Deadline d, const GateServer& s)
      : fd(std::move(f)),
        deadline(d),
        in(kMaxHandshakeFrameBytes),
        hs(s.token, s.role, random_nonce(), s.purpose_ok) {}
  Fd fd;
  Deadline deadline;
  FrameDecoder in;
  std::string out;  // our hello, not yet fully written
  ServerHandshake hs;
  bool challenged = false;
};

HandshakeGate::HandshakeGate(int listen_fd, GateServer server, GateLimits limits, Log log)
    : listen_fd_(listen_fd), server_(std::move(server)), limits_(limits), log_(std::move(log)) {
  int flags = ::fcntl(listen_fd_, F_GETFL, 0);
  if (flags < 0 || ::fcntl(listen_fd_, F_SETFL, flags | O_NONBLOCK) < 0)
    throw WireError(WireErrorKind::kIo,
                    std::string("fcntl(O_NONBLOCK) on the listener: ") + std::strerror(errno));
  limits_.max_pending = std::max(1, limits_.max_pending);
  // A passphrase token's key takes a scrypt (~0.2 s): derive it now, not in the loop on the first
  // connection's proof, where it would stall every handshake at once.
  (void)session_key(server_.token);
}

HandshakeGate::~HandshakeGate() { stop(); }

void HandshakeGate::stop() {
  pending_.clear();  // closes each descriptor
  admitted_.clear();
}

std::string HandshakeGate::last_rejection() const {
  std::lock_guard<std::mutex> lock(why_mu_);
  return last_rejection_;
}

void HandshakeGate::note_rejection(const std::string& why) {
  int n = ++rejected_;
  {
    std::lock_guard<std::mutex> lock(why_mu_);
    last_rejection_ = why;
  }
  if (!log_) return;
  if (n <= kLoggedRejections)
    log_("rejected a connection: " + why);
  else if (n % kLogEvery == 0)
    log_(std::to_string(n) + " connections rejected so far; the latest: " + why);
}

std::optional<Admitted> HandshakeGate::next(Deadline deadline) {
  std::vector<pollfd> fds;
  std::vector<Pending*> owners;
  for (;;) {
    expire_overdue();
    if (!admitted_.empty()) {
      Admitted a = std::move(admitted_.front());
      admitted_.pop_front();
      return a;
    }
    if (Clock::now() >= deadline) return std::nullopt;
    // Wake at the caller's deadline or the first pending one, whichever comes first.
    Deadline wake = deadline;
    fds.assign(1, pollfd{listen_fd_, POLLIN, 0});
    owners.assign(1, nullptr);
    for (auto& p : pending_) {
      wake = std::min(wake, p->deadline);
      fds.push_back({p->fd.get(), static_cast<short>(POLLIN | (p->out.empty() ? 0 : POLLOUT)), 0});
      owners.push_back(p.get());
    }
    if (poll_until(fds.data(), fds.size(), wake, "connections to authenticate") == 0) continue;
    if (fds[0].revents & (POLLERR | POLLNVAL))
      throw WireError(WireErrorKind::kIo, "the listening socket failed");
    // Pending connections first (their handshakes are under way), then the new arrivals.
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Pending* p = owners[i];
      if (!service(*p))
        pending_.remove_if([p](const std::unique_ptr<Pending>& q) { return q.get() == p; });
    }
    if (fds[0].revents & POLLIN) accept_ready();
  }
}

void HandshakeGate::accept_ready() {
  for (int taken = 0; taken < kAcceptsPerRound; ++taken) {
    int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) {
      int e = errno;
      if (e == EAGAIN || e == EWOULDBLOCK) return;  // taken all there were
      if (transient_accept_errno(e)) continue;
      if (exhausted_errno(e)) {
        if (pending_.empty()) {
          // Nothing of ours to free: the descriptors are held elsewhere. Back off briefly.
          if (log_) log_(std::string("accept: ") + std::strerror(e) + " (backing off)");
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          return;
        }
        evict_oldest(std::string("closed to free a descriptor (accept: ") + std::strerror(e) + ")");
        continue;
      }
      throw WireError(WireErrorKind::kIo, std::string("accept: ") + std::strerror(e));
    }
    if (static_cast<int>(pending_.size()) >= limits_.max_pending)
      evict_oldest("the oldest of " + std::to_string(pending_.size()) +
                   " pending handshakes, closed to make room for a new connection (the cap)");
    pending_.push_back(
        std::make_unique<Pending>(Fd(c), deadline_in_ms(limits_.handshake_timeout_ms), server_));
  }
}

void HandshakeGate::evict_oldest(const std::string& why) {
  ++evicted_;
  note_rejection(why);
  pending_.pop_front();
}

void HandshakeGate::expire_overdue() {
  const auto now = Clock::now();
  for (auto it = pending_.begin(); it != pending_.end();) {
    if ((*it)->deadline <= now) {
      note_rejection("no complete handshake within " +
                     std::to_string(limits_.handshake_timeout_ms) + " ms");
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
}

bool HandshakeGate::flush(Pending& p) {
  while (!p.out.empty()) {
    ssize_t n = ::send(p.fd.get(), p.out.data(), p.out.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      p.out.erase(0, static_cast<size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return true;  // POLLOUT will bring us back
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return false;
    }
  }
  return true;
}

void HandshakeGate::refuse(Pending& p, const std::string& why, const std::string& error_code,
                           const std::string& error_message) {
  // Tell the client why by name, in one non-blocking send: an error frame is far smaller than
  // any socket buffer, and a client that does not read it loses nothing but the reason.
  if (!error_code.empty()) {
    std::string bytes = encode_frame(make_frame(ErrorMessage{error_code, error_message}));
    (void)!::send(p.fd.get(), bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  note_rejection(why);
}

bool HandshakeGate::service(Pending& p) {
  if (!flush(p)) {
    refuse(p, "the peer closed during the handshake");
    return false;
  }
  char buf[kMaxHandshakeFrameBytes];
  for (;;) {
    ssize_t n = ::recv(p.fd.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) {
      refuse(p, "the peer closed during the handshake");
      return false;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;  // wait for more
      refuse(p, std::string("recv during the handshake: ") + std::strerror(errno));
      return false;
    }
    try {
      p.in.feed(buf, static_cast<size_t>(n));
      while (auto f = p.in.next()) {
        if (!p.challenged) {
          p.out = encode_frame(p.hs.on_challenge(*f));
          p.challenged = true;
          if (!flush(p)) {
            refuse(p, "the peer closed during the handshake");
            return false;
          }
          continue;
        }
        PeerClaims claims = p.hs.on_proof(*f);
        if (server_.check_claims) server_.check_claims(claims);
        // A client sends nothing after its proof until it has our welcome, so no byte the
        // caller needs is left in the decoder.
        set_blocking(p.fd.get(), true);
        admitted_.push_back({std::move(p.fd), std::move(claims)});
        return false;
      }
    } catch (const WireError& e) {
      refuse(p, e.what(), to_string(e.kind()), e.what());
      return false;
    }
  }
}

}  // namespace fabkit::wire
