#include "fabric/allreduce/gloo_store.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cstring>

#include "fabric/allreduce/allreduce_types.h"

namespace fabkit::fabric {
namespace {

enum Op : uint8_t { kSet = 1, kGet = 2 };

void put_u32(std::vector<char>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
uint32_t read_u32(int fd, int timeout_ms, const std::string& what) {
  unsigned char b[4];
  recv_all(fd, b, 4, timeout_ms, what);
  return b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
}
std::string read_bytes(int fd, size_t cap, int timeout_ms, const std::string& what) {
  uint32_t len = read_u32(fd, timeout_ms, what);
  if (len > cap)
    throw PeerError("io_error", what + ": frame of " + std::to_string(len) + " bytes exceeds the cap of " + std::to_string(cap));
  std::string s(len, '\0');
  recv_all(fd, s.data(), len, timeout_ms, what);
  return s;
}

}  // namespace

TokenStore::TokenStore(const TokenStoreOptions& opt) : opt_(opt) {
  HelloInfo mine{static_cast<uint32_t>(opt.rank), static_cast<uint32_t>(opt.world_size), opt.plan_digest};
  if (opt.rank != 0) {
    server_ = connect_peer(opt.rank0_addr, opt.port, opt.local_addr, opt.ifname, opt.token, mine, opt.timeout_ms, nullptr);
    set_nonblocking(server_.get());
    return;
  }
  Fd listener = listen_on(opt.local_addr, opt.port, opt.ifname);
  for (int i = 1; i < opt.world_size; ++i) {
    Fd c = accept_peer(listener.get(), opt.token, mine, opt.timeout_ms, nullptr);
    set_nonblocking(c.get());
    clients_.push_back(std::move(c));
  }
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw PeerError("io_error", std::string("pipe2: ") + std::strerror(errno));
  stop_read_ = Fd(p[0]);
  stop_write_ = Fd(p[1]);
  thread_ = std::thread([this] { serve(); });
}

TokenStore::~TokenStore() {
  if (thread_.joinable()) {
    char b = 1;
    (void)!::write(stop_write_.get(), &b, 1);
    thread_.join();
  }
}

void TokenStore::serve() {
  // Serves until told to stop or every client has gone; a client sending garbage is dropped (its
  // own run then fails with peer_closed), it never brings rank 0 down.
  std::vector<bool> alive(clients_.size(), true);
  for (;;) {
    std::vector<pollfd> pfds{{stop_read_.get(), POLLIN, 0}};
    for (size_t i = 0; i < clients_.size(); ++i) pfds.push_back({alive[i] ? clients_[i].get() : -1, POLLIN, 0});
    if (::poll(pfds.data(), pfds.size(), -1) < 0 && errno != EINTR) return;
    if (pfds[0].revents) return;
    for (size_t i = 0; i < clients_.size(); ++i) {
      if (!alive[i] || !pfds[i + 1].revents) continue;
      int fd = clients_[i].get();
      try {
        unsigned char op;
        recv_all(fd, &op, 1, opt_.timeout_ms, "reading a store request");
        std::string key = read_bytes(fd, kMaxKeyBytes, opt_.timeout_ms, "reading a store key");
        std::vector<char> reply;
        if (op == kSet) {
          std::string value = read_bytes(fd, kMaxValueBytes, opt_.timeout_ms, "reading a store value");
          std::lock_guard<std::mutex> lock(mu_);
          kv_[key] = std::vector<char>(value.begin(), value.end());
          reply.push_back(1);
        } else if (op == kGet) {
          std::lock_guard<std::mutex> lock(mu_);
          auto it = kv_.find(key);
          reply.push_back(it == kv_.end() ? 0 : 1);
          if (it != kv_.end()) {
            put_u32(reply, static_cast<uint32_t>(it->second.size()));
            reply.insert(reply.end(), it->second.begin(), it->second.end());
          }
        } else {
          throw PeerError("io_error", "unknown store op " + std::to_string(op));
        }
        send_all(fd, reply.data(), reply.size(), opt_.timeout_ms, "answering a store request");
      } catch (const PeerError&) {
        alive[i] = false;
      }
    }
  }
}

void TokenStore::set(const std::string& key, const std::vector<char>& data) {
  if (key.size() > kMaxKeyBytes || data.size() > kMaxValueBytes)
    throw PeerError("io_error", "store key '" + key.substr(0, 64) + "' or its value exceeds the frame cap");
  if (opt_.rank == 0) {
    std::lock_guard<std::mutex> lock(mu_);
    kv_[key] = data;
    return;
  }
  std::vector<char> frame{static_cast<char>(kSet)};
  put_u32(frame, static_cast<uint32_t>(key.size()));
  frame.insert(frame.end(), key.begin(), key.end());
  put_u32(frame, static_cast<uint32_t>(data.size()));
  frame.insert(frame.end(), data.begin(), data.end());
  send_all(server_.get(), frame.data(), frame.size(), opt_.timeout_ms, "sending store SET " + key);
  char ack;
  recv_all(server_.get(), &ack, 1, opt_.timeout_ms, "waiting for store SET " + key);
}

bool TokenStore::try_get(const std::string& key, std::vector<char>* value) {
  if (opt_.rank == 0) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kv_.find(key);
    if (it == kv_.end()) return false;
    *value = it->second;
    return true;
  }
  std::vector<char> frame{static_cast<char>(kGet)};
  put_u32(frame, static_cast<uint32_t>(key.size()));
  frame.insert(frame.end(), key.begin(), key.end());
  send_all(server_.get(), frame.data(), frame.size(), opt_.timeout_ms, "sending store GET " + key);
  char found;
  recv_all(server_.get(), &found, 1, opt_.timeout_ms, "waiting for store GET " + key);
  if (!found) return false;
  std::string v = read_bytes(server_.get(), kMaxValueBytes, opt_.timeout_ms, "reading store value of " + key);
  value->assign(v.begin(), v.end());
  return true;
}

void TokenStore::wait(const std::vector<std::string>& keys) {
  wait(keys, std::chrono::milliseconds(opt_.timeout_ms));
}

void TokenStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  auto limit = std::min<std::chrono::milliseconds>(timeout, std::chrono::milliseconds(opt_.timeout_ms));
  auto deadline = std::chrono::steady_clock::now() + limit;
  std::vector<char> scratch;
  for (const auto& key : keys) {
    // Polling every 5 ms: rendezvous happens once per run, a few keys; a push protocol would buy
    // nothing measurable.
    while (!try_get(key, &scratch)) {
      if (std::chrono::steady_clock::now() >= deadline)
        throw PeerError("peer_timeout", "store key '" + key + "' did not appear within " +
                                            std::to_string(limit.count()) + " ms (the peer did not reach the Gloo rendezvous)");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

std::vector<char> TokenStore::get(const std::string& key) {
  wait({key});
  std::vector<char> value;
  if (!try_get(key, &value)) throw PeerError("io_error", "store key '" + key + "' vanished");
  return value;
}

}  // namespace fabkit::fabric
