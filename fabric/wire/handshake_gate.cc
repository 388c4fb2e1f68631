#include "fabric/wire/handshake_gate.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "fabric/wire/wire_error.h"

namespace fabkit::wire {
namespace {

// accept(2): these report a connection that died before we took it, or a transient network
// condition; the listener itself is fine and the next connection may be real.
bool transient_accept_errno(int e) {
  return e == EINTR || e == EAGAIN || e == EWOULDBLOCK || e == ECONNABORTED || e == EPROTO ||
         e == ENETDOWN || e == ENOPROTOOPT || e == EHOSTDOWN || e == ENONET || e == EHOSTUNREACH ||
         e == EOPNOTSUPP || e == ENETUNREACH || e == EPERM;
}

// Out of descriptors or memory: a flood of connections can cause this, and ending the session
// would hand the flooder a win. Back off briefly and keep serving the connections we have.
bool exhausted_errno(int e) { return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM; }

constexpr int kExhaustedBackoffMs = 10;

}  // namespace

HandshakeGate::HandshakeGate(int listen_fd, Handshake handshake, GateLimits limits, Log log)
    : listen_fd_(listen_fd),
      handshake_(std::move(handshake)),
      limits_(limits),
      log_(std::move(log)) {
  int flags = ::fcntl(listen_fd_, F_GETFL, 0);
  if (flags < 0 || ::fcntl(listen_fd_, F_SETFL, flags | O_NONBLOCK) < 0)
    throw WireError(WireErrorKind::kIo,
                    std::string("fcntl(O_NONBLOCK) on the listener: ") + std::strerror(errno));
  wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_.valid())
    throw WireError(WireErrorKind::kIo, std::string("eventfd: ") + std::strerror(errno));
}

HandshakeGate::~HandshakeGate() { stop(); }

std::optional<Admitted> HandshakeGate::next(Deadline deadline) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      reap_finished();
      if (!admitted_.empty()) {
        Admitted a = std::move(admitted_.front());
        admitted_.pop_front();
        return a;
      }
    }
    if (Clock::now() >= deadline) return std::nullopt;
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    if (poll_until(p, 2, deadline, "connections to authenticate") == 0) continue;
    if (p[1].revents & POLLIN) {
      uint64_t count;
      (void)!::read(wake_.get(), &count, sizeof count);  // reset the eventfd; the queue decides
    }
    if (p[0].revents & (POLLERR | POLLNVAL))
      throw WireError(WireErrorKind::kIo, "the listening socket failed");
    if (p[0].revents & POLLIN) accept_one();
  }
}

void HandshakeGate::accept_one() {
  int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (c < 0) {
    int e = errno;
    if (transient_accept_errno(e)) return;
    if (exhausted_errno(e)) {
      if (log_) log_(std::string("accept: ") + std::strerror(e) + " (backing off)");
      std::this_thread::sleep_for(std::chrono::milliseconds(kExhaustedBackoffMs));
      return;
    }
    throw WireError(WireErrorKind::kIo, std::string("accept: ") + std::strerror(e));
  }
  Fd conn(c);
  std::lock_guard<std::mutex> lock(mu_);
  if (static_cast<int>(pending_.size()) >= limits_.max_pending) {
    ++rejected_;
    last_rejection_ = std::to_string(pending_.size()) + " handshakes already pending (the cap)";
    if (log_) log_("rejected a connection: " + last_rejection_);
    return;  // conn closes here, at once
  }
  pending_.push_back(conn.get());
  threads_.emplace_back([this, fd = conn.release()] { handshake(Fd(fd)); });
}

void HandshakeGate::handshake(Fd conn) {
  std::optional<PeerClaims> claims;
  std::string why;
  try {
    claims = handshake_(conn.get(), deadline_in_ms(limits_.handshake_timeout_ms));
  } catch (const WireError& e) {
    why = e.what();
  }
  if (!claims && log_) log_("rejected a connection: " + why);
  std::lock_guard<std::mutex> lock(mu_);
  pending_.erase(std::find(pending_.begin(), pending_.end(), conn.get()));
  if (claims && !stopping_) {
    admitted_.push_back({std::move(conn), std::move(*claims)});
    uint64_t one = 1;
    (void)!::write(wake_.get(), &one, sizeof one);
  } else if (!claims) {
    ++rejected_;
    last_rejection_ = why;
  }
  conn.reset();  // under the lock: stop() must never shut down a reused descriptor number
  finished_.push_back(std::this_thread::get_id());
}

void HandshakeGate::reap_finished() {
  for (auto id : finished_) {
    auto it = std::find_if(threads_.begin(), threads_.end(),
                           [&](const std::thread& t) { return t.get_id() == id; });
    if (it != threads_.end()) {
      it->join();  // the thread has left handshake(): this returns at once
      threads_.erase(it);
    }
  }
  finished_.clear();
}

void HandshakeGate::stop() {
  std::list<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (int fd : pending_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(threads_);
  }
  for (auto& t : threads)
    if (t.joinable()) t.join();
  std::lock_guard<std::mutex> lock(mu_);
  finished_.clear();
  admitted_.clear();
}

int HandshakeGate::rejected() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rejected_;
}

std::string HandshakeGate::last_rejection() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_rejection_;
}

}  // namespace fabkit::wire
