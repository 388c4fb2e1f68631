#include "fabric/allreduce/gloo_store.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cstring>

#include "common/hex.h"
#include "common/json_read.h"
#include "fabric/allreduce/allreduce_types.h"
#include "fabric/wire/frame.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::fabric {
namespace {

using wire::FrameType;

std::string hex_of(const std::string& s) { return hex_encode(s.data(), s.size()); }
std::string hex_of(const std::vector<char>& v) { return hex_encode(v.data(), v.size()); }

// A hex field of at most `cap` decoded bytes; PeerError io_error naming the field otherwise.
std::vector<char> unhex_field(const Json& j, const char* field, size_t cap, const std::string& what) {
  auto it = j.find(field);
  std::vector<uint8_t> bytes;
  if (it == j.end() || !it->is_string() || it->get_ref<const std::string&>().size() > 2 * cap ||
      !hex_decode(it->get<std::string>(), &bytes))
    throw PeerError("io_error", what + ": field '" + field + "' is not hex of at most " + std::to_string(cap) + " bytes");
  return {bytes.begin(), bytes.end()};
}

Json parse_payload(const wire::Frame& f, FrameType expected, const std::string& what) {
  Json j;
  try {
    j = parse_json(f.payload, what);
  } catch (const JsonReadError& e) {
    throw PeerError("io_error", e.what());
  }
  if (f.type != expected || !j.is_object())
    throw PeerError("io_error", what + ": expected a " + wire::to_string(expected) + " frame holding a JSON object, got a " +
                                    wire::to_string(f.type) + " frame");
  return j;
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
  // All ranks within the one timeout, handshaking concurrently.
  for (AcceptedPeer& p : accept_peers(listener.get(), static_cast<size_t>(opt.world_size - 1),
                                      opt.token, mine, opt.timeout_ms)) {
    set_nonblocking(p.fd.get());
    clients_.push_back(std::move(p.fd));
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
  // Serves until told to stop (the destructor writes to stop_write_: that, not time, ends this
  // wait) or every client has gone. Each request, once it starts, is read and answered by one
  // deadline; a client sending garbage or trickling is dropped (its own run then fails with
  // peer_closed), it never brings rank 0 down.
  std::vector<bool> alive(clients_.size(), true);
  for (;;) {
    std::vector<pollfd> pfds{{stop_read_.get(), POLLIN, 0}};
    for (size_t i = 0; i < clients_.size(); ++i) pfds.push_back({alive[i] ? clients_[i].get() : -1, POLLIN, 0});
    try {
      wire::poll_until(pfds.data(), pfds.size(), wire::kNoDeadline, "store clients");
    } catch (const wire::WireError&) {
      return;
    }
    if (pfds[0].revents) return;
    for (size_t i = 0; i < clients_.size(); ++i) {
      if (!alive[i] || !pfds[i + 1].revents) continue;
      int fd = clients_[i].get();
      try {
        auto deadline = wire::deadline_in_ms(opt_.timeout_ms);
        Json req = parse_payload(recv_frame(fd, kMaxFrameBytes, deadline, "reading a store request"), FrameType::kRequest,
                                 "store request");
        std::vector<char> key_bytes = unhex_field(req, "key_hex", kMaxKeyBytes, "store request");
        std::string key(key_bytes.begin(), key_bytes.end());
        std::string op = req.value("op", "");
        Json reply;
        if (op == "set") {
          std::vector<char> value = unhex_field(req, "value_hex", kMaxValueBytes, "store SET");
          std::lock_guard<std::mutex> lock(mu_);
          kv_[key] = std::move(value);
          reply = {{"ok", true}};
        } else if (op == "get") {
          std::lock_guard<std::mutex> lock(mu_);
          auto it = kv_.find(key);
          reply = {{"found", it != kv_.end()}};
          if (it != kv_.end()) reply["value_hex"] = hex_of(it->second);
        } else {
          throw PeerError("io_error", "unknown store op '" + op.substr(0, 32) + "'");
        }
        send_frame(fd, {FrameType::kResponse, reply.dump()}, deadline, "answering a store request");
      } catch (const PeerError&) {
        alive[i] = false;
        clients_[i].reset();  // closed, so that client learns at once
      }
    }
  }
}

Json TokenStore::exchange(const Json& request, wire::Deadline deadline, const std::string& what) {
  send_frame(server_.get(), {FrameType::kRequest, request.dump()}, deadline, "sending " + what);
  return parse_payload(recv_frame(server_.get(), kMaxFrameBytes, deadline, "waiting for the answer to " + what),
                       FrameType::kResponse, what);
}

void TokenStore::set(const std::string& key, const std::vector<char>& data) {
  if (key.size() > kMaxKeyBytes || data.size() > kMaxValueBytes)
    throw PeerError("io_error", "store key '" + key.substr(0, 64) + "' or its value exceeds the frame cap");
  if (opt_.rank == 0) {
    std::lock_guard<std::mutex> lock(mu_);
    kv_[key] = data;
    return;
  }
  Json reply = exchange({{"op", "set"}, {"key_hex", hex_of(key)}, {"value_hex", hex_of(data)}},
                        wire::deadline_in_ms(opt_.timeout_ms), "store SET " + key);
  if (reply.value("ok", false) != true) throw PeerError("io_error", "rank 0 did not confirm store SET " + key);
}

bool TokenStore::try_get(const std::string& key, std::vector<char>* value, wire::Deadline deadline) {
  if (opt_.rank == 0) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kv_.find(key);
    if (it == kv_.end()) return false;
    *value = it->second;
    return true;
  }
  Json reply = exchange({{"op", "get"}, {"key_hex", hex_of(key)}}, deadline, "store GET " + key);
  auto found = reply.find("found");
  if (found == reply.end() || !found->is_boolean())
    throw PeerError("io_error", "store GET " + key + ": the answer has no boolean 'found'");
  if (!found->get<bool>()) return false;
  *value = unhex_field(reply, "value_hex", kMaxValueBytes, "store GET " + key);
  return true;
}

void TokenStore::wait(const std::vector<std::string>& keys) {
  wait(keys, std::chrono::milliseconds(opt_.timeout_ms));
}

void TokenStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  auto limit = std::min<std::chrono::milliseconds>(timeout, std::chrono::milliseconds(opt_.timeout_ms));
  auto deadline = wire::Clock::now() + limit;
  std::vector<char> scratch;
  for (const auto& key : keys) {
    auto missing = [&] {
      return PeerError("peer_timeout", "store key '" + key + "' did not appear within " + std::to_string(limit.count()) +
                                           " ms (the peer did not reach the Gloo rendezvous)");
    };
    // Polling every 5 ms: rendezvous happens once per run, a few keys; a push protocol would buy
    // nothing measurable. Each GET is bounded by the same deadline as the whole wait.
    for (;;) {
      try {
        if (try_get(key, &scratch, deadline)) break;
      } catch (const PeerError& e) {
        if (e.kind() == "peer_timeout") throw missing();
        throw;
      }
      if (wire::Clock::now() >= deadline) throw missing();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

std::vector<char> TokenStore::get(const std::string& key) {
  wait({key});
  std::vector<char> value;
  if (!try_get(key, &value, wire::deadline_in_ms(opt_.timeout_ms)))
    throw PeerError("io_error", "store key '" + key + "' vanished");
  return value;
}

}  // namespace fabkit::fabric
