#include <algorithm>
#include <cstring>
#include <optional>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fabric/tcp/tcp_test.h"
#include "fabric/wire/handshake.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::tcp {

TcpTestServer::TcpTestServer(const std::string& addr, std::string token, int idle_timeout_ms,
                             const std::string& ifname)
    : listen_fd_(listen_tcp(addr, 0, 4096, ifname)),
      token_(std::move(token)),
      idle_timeout_ms_(idle_timeout_ms) {
  port_ = local_port(listen_fd_.get());
  gate_ = std::make_unique<wire::HandshakeGate>(
      listen_fd_.get(),
      wire::GateServer{token_,
                       "agent",
                       [](const std::string& p) { return p == "tcp_ping" || p == "tcp_sink"; },
                       {}},
      wire::GateLimits{kMaxPendingTestHandshakes, kDataHandshakeTimeoutMs});
  acceptor_ = std::thread([this] { accept_loop(); });
}

uint64_t TcpTestServer::rejected_connections() const {
  return rejected_.load() + static_cast<uint64_t>(gate_->rejected());
}

TcpTestServer::~TcpTestServer() { stop(); }

void TcpTestServer::stop() {
  if (stop_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);  // wakes workers blocked in poll
  }
  if (acceptor_.joinable()) acceptor_.join();
  for (auto& t : workers_)
    if (t.joinable()) t.join();
}

void TcpTestServer::reap_finished() {
  for (auto id : finished_) {
    auto it = std::find_if(workers_.begin(), workers_.end(), [&](const std::thread& t) { return t.get_id() == id; });
    if (it != workers_.end()) {
      it->join();  // the thread has left serve(): this returns at once
      workers_.erase(it);
    }
  }
  finished_.clear();
}

void TcpTestServer::accept_loop() {
  while (!stop_.load()) {
    std::optional<wire::Admitted> a;
    try {
      // Short waits so stop() is noticed quickly; the idle timeout bounds the server's life.
      a = gate_->next(wire::deadline_in_ms(100));
    } catch (const wire::WireError&) {
      return;  // the listener failed: clients see connections refused and report it
    }
    if (!a) continue;
    std::lock_guard<std::mutex> lock(mu_);
    reap_finished();
    if (stop_.load() || open_fds_.size() >= kMaxTestConnections) {  // bound threads at once
      ++rejected_;
      continue;  // a->fd closes here
    }
    int fd = a->fd.release();
    open_fds_.insert(fd);
    workers_.emplace_back(
        [this, fd, claims = std::move(a->claims)] { serve(wire::Fd(fd), claims); });
  }
  gate_->stop();  // pending handshakes end with the server
}

void TcpTestServer::serve(wire::Fd fd, wire::PeerClaims claims) {
  int raw = fd.get();
  try {
    wire::write_frame(raw, wire::welcome_frame(claims, Json::object()),
                      wire::deadline_in_ms(kDataHandshakeTimeoutMs));
    set_nodelay(raw);
    if (claims.purpose == "tcp_ping") {
      char buf[kPingBytes];
      for (;;) {
        wire::read_exact(raw, buf, sizeof buf, wire::deadline_in_ms(idle_timeout_ms_), "ping");
        wire::write_all(raw, buf, sizeof buf, wire::deadline_in_ms(idle_timeout_ms_), "pong");
      }
    } else {  // tcp_sink: the gate admitted nothing else
      std::vector<char> buf(1 << 20);
      uint64_t total = 0;
      for (;;) {
        wire::wait_fd(raw, POLLIN, wire::deadline_in_ms(idle_timeout_ms_), "bandwidth stream");
        ssize_t r = ::recv(raw, buf.data(), buf.size(), MSG_DONTWAIT);
        if (r > 0) total += static_cast<uint64_t>(r);
        else if (r == 0) break;  // the client's SHUT_WR: the stream is complete
        else if (errno != EINTR && errno != EAGAIN) throw wire::WireError(wire::WireErrorKind::kIo, std::strerror(errno));
      }
      unsigned char ack[8];
      for (int i = 0; i < 8; ++i) ack[i] = static_cast<unsigned char>(total >> (56 - 8 * i));
      wire::write_all(raw, ack, sizeof ack, wire::deadline_in_ms(idle_timeout_ms_), "ack");
    }
  } catch (const wire::WireError&) {
    // A data connection ending (closed, timed out) ends only that connection; the client side
    // measures and reports what failed.
  }
  std::lock_guard<std::mutex> lock(mu_);
  open_fds_.erase(raw);
  fd.reset();  // under the lock: stop() must never shut down a reused descriptor number
  finished_.push_back(std::this_thread::get_id());
}

}  // namespace fabkit::tcp
