#include <algorithm>
#include <cstring>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fabric/tcp/tcp_test.h"
#include "fabric/wire/handshake.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::tcp {

TcpTestServer::TcpTestServer(const std::string& addr, std::string token, int idle_timeout_ms,
                             const std::string& ifname)
    : listen_fd_(listen_tcp(addr, 0, 64, ifname)), token_(std::move(token)), idle_timeout_ms_(idle_timeout_ms) {
  port_ = local_port(listen_fd_.get());
  acceptor_ = std::thread([this] { accept_loop(); });
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
    pollfd p{listen_fd_.get(), POLLIN, 0};
    // Short poll so stop() is noticed quickly; the idle timeout bounds the server's life.
    if (::poll(&p, 1, 100) <= 0) continue;
    int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    reap_finished();
    if (stop_.load() || open_fds_.size() >= kMaxTestConnections) {  // bound threads at once
      ::close(fd);
      continue;
    }
    open_fds_.insert(fd);
    workers_.emplace_back([this, fd] { serve(wire::Fd(fd)); });
  }
}

void TcpTestServer::serve(wire::Fd fd) {
  int raw = fd.get();
  try {
    // The handshake must come quickly: a port scanner or stray client gets a few seconds at most,
    // in its own thread, so it delays nobody else.
    wire::PeerClaims hello;
    try {
      hello = wire::server_handshake(raw, token_, "agent",
                                     [](const std::string& p) { return p == "tcp_ping" || p == "tcp_sink"; },
                                     wire::deadline_in_ms(kDataHandshakeTimeoutMs));
    } catch (const wire::WireError&) {
      ++rejected_;
      throw;
    }
    wire::write_frame(raw, wire::welcome_frame(Json::object()), wire::deadline_in_ms(kDataHandshakeTimeoutMs));
    set_nodelay(raw);
    if (hello.purpose == "tcp_ping") {
      char buf[kPingBytes];
      for (;;) {
        wire::read_exact(raw, buf, sizeof buf, wire::deadline_in_ms(idle_timeout_ms_), "ping");
        wire::write_all(raw, buf, sizeof buf, wire::deadline_in_ms(idle_timeout_ms_), "pong");
      }
    } else {  // tcp_sink: the handshake admitted nothing else
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
    // A data connection ending (closed, timed out, bad token) ends only that connection; the
    // client side measures and reports what failed.
  }
  std::lock_guard<std::mutex> lock(mu_);
  open_fds_.erase(raw);
  fd.reset();  // under the lock: stop() must never shut down a reused descriptor number
  finished_.push_back(std::this_thread::get_id());
}

}  // namespace fabkit::tcp
