#include "common/net_route.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "common/utf8_text.h"

namespace fabkit {
namespace {

constexpr int kResolveTimeoutMs = 2000;  // a dead DNS server must not hang `fabcheck node`

std::optional<std::string> address_text(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  const void* src = nullptr;
  if (sa->sa_family == AF_INET) {
    src = &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr;
  } else if (sa->sa_family == AF_INET6) {
    src = &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr;
  } else {
    return std::nullopt;
  }
  if (!inet_ntop(sa->sa_family, src, buf, sizeof buf)) return std::nullopt;
  return std::string(buf);
}

}  // namespace

// getaddrinfo has no timeout of its own; run it on a detached thread and stop waiting after
// kResolveTimeoutMs (the thread finishes on its own; its state is shared, not on our stack).
std::optional<std::vector<std::string>> resolve_bounded(const std::string& host, std::string* err) {
  struct State {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    int rc = 0;
    std::vector<std::string> addrs;
  };
  auto st = std::make_shared<State>();
  std::thread([st, host] {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
    std::vector<std::string> out;
    for (addrinfo* p = res; rc == 0 && p; p = p->ai_next)
      if (auto a = address_text(p->ai_addr))
        if (std::find(out.begin(), out.end(), *a) == out.end()) out.push_back(*a);
    if (res) freeaddrinfo(res);
    std::lock_guard<std::mutex> g(st->m);
    st->rc = rc;
    st->addrs = std::move(out);
    st->done = true;
    st->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lk(st->m);
  if (!st->cv.wait_for(lk, std::chrono::milliseconds(kResolveTimeoutMs), [&] { return st->done; })) {
    *err = "name resolution of '" + utf8_clean(host) + "' timed out after " +
           std::to_string(kResolveTimeoutMs) + " ms";
    return std::nullopt;
  }
  if (st->rc != 0) {
    *err = "cannot resolve '" + utf8_clean(host) + "': " + gai_strerror(st->rc);
    return std::nullopt;
  }
  return st->addrs;
}

// The kernel's choice of source address towards the peer: connect() on a UDP socket sends
// nothing, it only consults the routing table.
std::optional<std::string> route_source_address(const std::string& peer) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, peer.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(9);
    len = sizeof *v4;
  } else if (inet_pton(AF_INET6, peer.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(9);
    len = sizeof *v6;
  } else {
    return std::nullopt;
  }
  int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> out;
  sockaddr_storage local{};
  socklen_t llen = sizeof local;
  if (connect(fd, reinterpret_cast<sockaddr*>(&ss), len) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) == 0)
    out = address_text(reinterpret_cast<sockaddr*>(&local));
  close(fd);
  return out;
}

}  // namespace fabkit
