#include "fabric/agent/agent_rdma.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <thread>

#include <poll.h>
#include <sys/socket.h>

#include "common/environment.h"
#include "fabkit/config.h"
#include "fabric/rdma/rc_types.h"
#include "fabric/tcp/tcp_socket.h"
#include "fabric/tcp/tcp_test.h"
#include "fabric/wire/handshake.h"
#include "fabric/wire/handshake_gate.h"
#include "fabric/wire/messages.h"
#include "fabric/wire/wire_error.h"
#if FABKIT_HAVE_VERBS
#include "verbs/ibverbs_api.h"
#endif

namespace fabkit::agent {
namespace {

namespace rdma = fabkit::fabric::rdma;

// Endpoint info is ~300 bytes of JSON; anything bigger on this channel is not ours.
constexpr uint32_t kMaxChannelFrameBytes = 4096;
// The client may be started before the server has bound the port (the controller sends both
// requests at once); retry refused connects at this interval until the deadline.
constexpr int kConnectRetryMs = 50;
// Only the peer agent should connect here. Strays handshake beside it, and at the cap the oldest
// is closed (wire/handshake_gate.h), so the cap bounds descriptors, not who gets in.
constexpr int kMaxPendingChannelHandshakes = 256;

struct ChannelError : std::runtime_error {
  int err;
  ChannelError(int e, const std::string& m) : std::runtime_error(m), err(e) {}
};

// Server: the first connection that proves the token for "rdma_rc" within timeout_ms. Strays
// handshake beside it (wire/handshake_gate.h), each cut off at the data-handshake bound or
// pushed out by newer ones, so none of them delays the real peer.
wire::Fd accept_peer(const PeerChannelArgs& a, const std::string& token) {
  wire::Fd listener;
  try {
    listener = tcp::listen_tcp(a.local_addr, a.port, 1024);
  } catch (const wire::WireError& e) {
    throw ChannelError(EADDRINUSE, std::string("listen: ") + e.what());
  }
  auto deadline = wire::deadline_in_ms(a.timeout_ms);
  std::optional<wire::Admitted> admitted;
  std::string last_rejection;
  {
    wire::HandshakeGate gate(
        listener.get(),
        {token, "agent", [purpose = a.purpose](const std::string& p) { return p == purpose; }, {}},
        {kMaxPendingChannelHandshakes, tcp::kDataHandshakeTimeoutMs});
    try {
      admitted = gate.next(deadline);
    } catch (const wire::WireError& e) {
      throw ChannelError(EIO, std::string("accept: ") + e.what());
    }
    last_rejection = gate.last_rejection();
  }
  if (!admitted) {
    std::string msg = "no peer connected to " + a.local_addr + ":" + std::to_string(a.port) +
                      " with the session token within " + std::to_string(a.timeout_ms) + " ms";
    if (!last_rejection.empty()) msg += " (last connection rejected: " + last_rejection + ")";
    throw ChannelError(ETIMEDOUT, msg);
  }
  try {
    wire::write_frame(admitted->fd.get(),
                      wire::welcome_frame(admitted->claims, {{"mode", a.purpose}}), deadline);
  } catch (const wire::WireError& e) {
    throw ChannelError(e.kind() == wire::WireErrorKind::kTimeout ? ETIMEDOUT : EIO,
                       std::string("welcome: ") + e.what());
  }
  return std::move(admitted->fd);
}

wire::Fd connect_peer(const PeerChannelArgs& a, const std::string& token) {
  auto deadline = wire::deadline_in_ms(a.timeout_ms);
  std::string last;
  for (;;) {
    int left = wire::ms_left(deadline);
    if (left <= 0)
      throw ChannelError(ETIMEDOUT, "could not reach the server's endpoint channel within " +
                                        std::to_string(a.timeout_ms) + " ms: " + last);
    auto c = tcp::connect_tcp(a.peer_addr, a.port, a.local_addr, left);
    if (c.status == tcp::ConnectStatus::kOpen) {
      // The handshake reads the server's answer before sending anything else: a refusal (error
      // frame, then close) is read here, before a later write could turn the close into a reset.
      try {
        wire::client_handshake(c.fd.get(), token, "peer", a.purpose, Json::object(), deadline);
      } catch (const wire::WireError& e) {
        if (e.kind() == wire::WireErrorKind::kImpostor || e.kind() == wire::WireErrorKind::kBadToken ||
            e.kind() == wire::WireErrorKind::kRejected)
          throw ChannelError(EACCES, std::string("server refused the channel: ") + e.what());
        throw ChannelError(e.kind() == wire::WireErrorKind::kTimeout ? ETIMEDOUT : EIO,
                           std::string("hello: ") + e.what());
      }
      return std::move(c.fd);
    }
    last = c.message;
    if (c.status != tcp::ConnectStatus::kClosed)  // only "nothing listens yet" is worth a retry
      throw ChannelError(c.err ? c.err : EIO, last);
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(kConnectRetryMs, left)));
  }
}

// One exchange: our info as a request frame {id: round, op: "rc_endpoint"}, the peer's back.
rdma::RcEndpointInfo swap(int fd, uint64_t round, const rdma::RcEndpointInfo& mine, int timeout_ms) {
  auto deadline = wire::deadline_in_ms(timeout_ms);
  wire::write_frame(fd, wire::make_frame(wire::Request{round, "rc_endpoint", rdma::to_json(mine)}), deadline);
  wire::Frame f = wire::read_frame(fd, deadline, kMaxChannelFrameBytes);
  if (f.type == wire::FrameType::kError) {
    auto e = wire::parse_error(f);
    throw ChannelError(EPROTO, "peer: " + e.code + ": " + e.message);
  }
  wire::Request r = wire::parse_request(f);
  if (r.op != "rc_endpoint" || r.id != round)
    throw ChannelError(EPROTO, "expected rc_endpoint #" + std::to_string(round) + ", got '" + r.op +
                                   "' #" + std::to_string(r.id));
  try {
    return rdma::endpoint_from_json(r.args);
  } catch (const std::invalid_argument& e) {
    throw ChannelError(EPROTO, e.what());
  }
}

// After our error frame: stop sending, then read (and drop) until the peer closes or 1 s passes.
// Closing with the peer's endpoint frame unread would make the kernel answer with a reset, which
// can discard our error frame before the peer reads it.
void linger_close(int fd) {
  ::shutdown(fd, SHUT_WR);
  auto deadline = wire::deadline_in_ms(1000);
  char buf[4096];
  for (;;) {
    try {
      wire::wait_fd(fd, POLLIN, deadline, "peer close");
    } catch (const wire::WireError&) {
      return;
    }
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return;
  }
}

Json base(const RcArgs& a) {
  return {{"role", a.role}, {"mode", a.mode}, {"device", a.device}, {"ib_port", a.ib_port},
          {"gid_index", a.gid_index}, {"size_bytes", a.size_bytes}};
}

}  // namespace

wire::Fd open_peer_channel(const PeerChannelArgs& a, const std::string& token) {
  try {
    return a.server ? accept_peer(a, token) : connect_peer(a, token);
  } catch (const ChannelError& e) {
    throw std::runtime_error(e.what());
  }
}

Json run_rc_op(verbs::VerbsApi& api, const RcArgs& a, const std::string& token) {
  Json out = base(a);
  wire::Fd ch;
  try {
    PeerChannelArgs c{a.role == "server", a.local_addr, a.peer_addr, a.port, a.timeout_ms, "rdma_rc"};
    ch = c.server ? accept_peer(c, token) : connect_peer(c, token);
  } catch (const ChannelError& e) {
    // Nothing was measured: the test did not start, so no RC diagnosis applies.
    rdma::RcTestResult r;
    r.reason = std::string("endpoint channel: ") + e.what();
    out.update(rdma::to_json(r));
    out["channel"] = "failed";
    out["local"] = nullptr;
    out["remote"] = nullptr;
    return out;
  }
  tcp::set_nodelay(ch.get());
  rdma::RcTestSpec s;
  std::string class_error;
  auto service = rdma::ib_service_class_from_env(Environment::from_process().vars(), &class_error);
  if (!service) {
    rdma::RcTestResult r;
    r.reason = class_error;
    out.update(rdma::to_json(r));
    out["channel"] = "ok";
    out["local"] = nullptr;
    out["remote"] = nullptr;
    return out;
  }
  s.traffic_class = service->traffic_class;
  s.service_level = service->service_level;
  s.device = a.device;
  s.port = a.ib_port;
  s.gid_index = a.gid_index;
  s.role = a.role == "server" ? rdma::RcRole::kServer : rdma::RcRole::kClient;
  s.mode = a.mode == "send_lat" ? rdma::RcMode::kSendLat : rdma::RcMode::kWriteBw;
  s.size_bytes = a.size_bytes;
  s.iters = a.iters;
  s.warmup_iters = a.warmup_iters;
  s.tx_depth = a.tx_depth;
  s.timeout_ms = a.timeout_ms;
  s.budget_ms = a.budget_ms;  // 0: the test's own default (fabric/rdma)
  // After the ready barrier nothing more travels on the channel unless a side gives up: its error
  // frame ends our wait at once instead of at the budget. A plain close is not a stop (a peer
  // that finished closes too, maybe before our last completion is polled).
  bool channel_done = false;
  s.peer_stopped = [&]() -> std::string {
    if (channel_done) return "";
    pollfd p{ch.get(), POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return "";
    try {
      wire::Frame f = wire::read_frame(ch.get(), wire::deadline_in_ms(1000), kMaxChannelFrameBytes);
      if (f.type != wire::FrameType::kError) return "";
      auto e = wire::parse_error(f);
      channel_done = true;
      return "peer: " + e.code + ": " + e.message;
    } catch (const wire::WireError&) {
      channel_done = true;
      return "";
    }
  };
  uint64_t round = 0;
  Json local = nullptr, remote = nullptr;
  rdma::RcExchange exchange = [&](const rdma::RcEndpointInfo& mine) -> Expected<rdma::RcEndpointInfo> {
    try {
      auto peer = swap(ch.get(), ++round, mine, a.timeout_ms);
      local = rdma::to_json(mine);
      remote = rdma::to_json(peer);
      return peer;
    } catch (const ChannelError& e) {
      return SysError{"endpoint exchange #" + std::to_string(round), e.err, e.what()};
    } catch (const wire::WireError& e) {
      return SysError{"endpoint exchange #" + std::to_string(round),
                      e.kind() == wire::WireErrorKind::kTimeout ? ETIMEDOUT : EPROTO, e.what()};
    }
  };
  rdma::RcTestResult r = rdma::run_rc_test(api, s, exchange);
  // Let a peer still waiting (for our endpoint, or for completions) learn we stopped, instead of
  // waiting out its timeout or its budget.
  if (r.status != "ok" && !channel_done)
    try {
      wire::write_frame(ch.get(), wire::make_frame(wire::ErrorMessage{"agent.rdma_rc_failed", r.reason}),
                        wire::deadline_in_ms(1000));
      linger_close(ch.get());
    } catch (const wire::WireError&) {
    }
  out.update(rdma::to_json(r));
  out["channel"] = "ok";
  out["local"] = local;
  out["remote"] = remote;
  return out;
}

Json run_rc_op_live(const RcArgs& a, const std::string& token) {
#if FABKIT_HAVE_VERBS
  auto api = verbs::make_ibverbs_api();
  return run_rc_op(*api, a, token);
#else
  (void)token;
  Json out = base(a);
  out.update({{"status", "unavailable"},
              {"reason", "this fabcheck was built without libibverbs (FABKIT_HAVE_VERBS off)"},
              {"channel", nullptr}});
  return out;
#endif
}

}  // namespace fabkit::agent
