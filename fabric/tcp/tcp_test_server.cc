#include <cstring>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fabric/tcp/tcp_test.h"
#include "fabric/wire/messages.h"
#include "fabric/wire/token.h"
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

void TcpTestServer::accept_loop() {
  while (!stop_.load()) {
    pollfd p{listen_fd_.get(), POLLIN, 0};
    // Short poll so stop() is noticed quickly; the idle timeout bounds the server's life.
    if (::poll(&p, 1, 100) <= 0) continue;
    int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_.load() || workers_.size() >= 256) {  // bound threads per server
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
    // The handshake must come quickly: a port scanner or stray client gets a few seconds at most.
    auto hello = wire::parse_hello(wire::read_frame(raw, wire::deadline_in_ms(5000), 4096));
    if (!wire::constant_time_equal(hello.token, token_)) {
      ++rejected_;
      wire::write_frame(raw, wire::make_frame(wire::ErrorMessage{"wire.bad_token",
                                                                 "session token does not match"}),
                        wire::deadline_in_ms(1000));
      throw wire::WireError(wire::WireErrorKind::kBadToken, "data connection");
    }
    std::string mode = hello.info.value("mode", "");
    set_nodelay(raw);
    if (mode == "ping") {
      char buf[kPingBytes];
      for (;;) {
        wire::read_exact(raw, buf, sizeof buf, wire::deadline_in_ms(idle_timeout_ms_), "ping");
        wire::write_all(raw, buf, sizeof buf, wire::deadline_in_ms(idle_timeout_ms_), "pong");
      }
    } else if (mode == "sink") {
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
}

}  // namespace fabkit::tcp
