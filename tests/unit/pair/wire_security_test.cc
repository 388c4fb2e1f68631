// The agent's attack surface over loopback (issues #11 and #19, "The wire"): an impostor on
// another of the agent's addresses gets no token and the controller fails closed by name; a
// slow-loris client does not delay the controller, nor do hundreds of held connections on the
// control port or on a TCP test server (at the pending cap the oldest is closed, never the new
// arrival); probe, measure and all-reduce targets (every ring address) restricted to the session's
// peers; out-of-range fields refused by name; no lifetime cap on a test server.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>

#include <future>
#include <thread>

#include "fabric/agent/agent.h"
#include "fabric/agent/agent_requests.h"
#include "fabric/pair/agent_client.h"
#include "fabric/tcp/tcp_socket.h"
#include "fabric/tcp/tcp_test.h"
#include "fabric/wire/handshake.h"
#include "fabric/wire/messages.h"
#include "fabric/wire/token.h"
#include "fabric/wire/wire_error.h"

namespace fabkit {
namespace {

using namespace std::chrono_literals;

int64_t ms_since(wire::Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(wire::Clock::now() - t0).count();
}

struct Agent {
  std::promise<uint16_t> port_promise;
  uint16_t port = 0;
  std::future<agent::AgentExit> exit;
  std::string token = wire::generate_token();
  std::vector<std::string> log;
  std::mutex log_mu;
  explicit Agent(int handshake_ms = 5000,
                 int max_pending = agent::AgentOptions{}.max_pending_handshakes) {
    agent::AgentOptions o;
    o.bind_addr = "127.0.0.1";
    o.token = token;
    o.name = "loop";
    o.accept_timeout_ms = 8000;
    o.idle_timeout_ms = 8000;
    o.handshake_timeout_ms = handshake_ms;
    o.max_pending_handshakes = max_pending;
    exit = std::async(std::launch::async, [this, o] {
      return agent::run_agent(o, [this](const Json& h) { port_promise.set_value(h["port"].get<uint16_t>()); },
                              [this](const std::string& l) {
                                std::lock_guard<std::mutex> lock(log_mu);
                                log.push_back(l);
                              });
    });
    port = port_promise.get_future().get();
  }
  // The agent's thread logs into log/log_mu until run_agent returns: wait for it before they go
  // (a test that fails by exception destroys the members while the agent still runs).
  ~Agent() {
    if (exit.valid()) exit.wait();
  }
  wire::Fd dial() {
    auto c = tcp::connect_tcp("127.0.0.1", port, "", 2000);
    EXPECT_EQ(c.status, tcp::ConnectStatus::kOpen) << c.message;
    return std::move(c.fd);
  }
  Json controller_hello(int fd) {
    return wire::client_handshake(fd, token, "controller", "control", Json::object(), wire::deadline_in_ms(3000));
  }
};

wire::Response call(int fd, const std::string& op, const Json& args) {
  static uint64_t id = 1;
  wire::write_frame(fd, wire::make_frame(wire::Request{id++, op, args}), wire::deadline_in_ms(2000));
  return wire::parse_response(wire::read_frame(fd, wire::deadline_in_ms(10000)));
}

// True when the peer closes (EOF or reset) within ms, without sending anything first.
bool closed_within(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, ms) != 1) return false;
  char c;
  ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

void bye(int fd) { wire::write_frame(fd, wire::make_bye(), wire::deadline_in_ms(1000)); }

// The agent reports two addresses; the first one answers with a process that does not know the
// token (a listener on docker0, a stale agent). The controller must not send the token there,
// must stop with pair.agent_impostor, and must not go on to try the secret on the real agent.
TEST(WireSecurity, ImpostorOnAnotherAddressGetsNoTokenAndTheSessionFailsClosed) {
  Agent real;
  wire::Fd trap = tcp::listen_tcp("127.0.0.2", real.port);  // same port, another local address
  std::string received;
  std::thread impostor([&] {
    wire::Fd c = tcp::accept_until(trap.get(), wire::deadline_in_ms(5000));
    // It plays the agent's part as well as it can: a handshake with a token of its own.
    try {
      wire::server_handshake(c.get(), std::string(64, 'e'), "agent", [](const std::string&) { return true; },
                             wire::deadline_in_ms(3000));
    } catch (const wire::WireError&) {
    }
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(c.get(), buf, sizeof buf, MSG_DONTWAIT)) > 0) received.append(buf, static_cast<size_t>(n));
  });
  pair::AgentClient client("hostb", real.token);
  client.set_hello({{"port", real.port}, {"addresses", {"127.0.0.2", "127.0.0.1"}}});
  try {
    client.connect(3000);
    ADD_FAILURE() << "connected through an impostor";
  } catch (const pair::StepError& e) {
    EXPECT_EQ(e.code(), "pair.agent_impostor") << e.what();
    EXPECT_NE(std::string(e.what()).find("127.0.0.2"), std::string::npos) << e.what();
  }
  impostor.join();
  EXPECT_EQ(received.find(real.token), std::string::npos);
  // Fail closed: the real agent on 127.0.0.1 was never contacted, so it is still waiting.
  EXPECT_EQ(real.exit.wait_for(200ms), std::future_status::timeout);
  auto fd = real.dial();
  real.controller_hello(fd.get());
  bye(fd.get());
  EXPECT_EQ(real.exit.get(), agent::AgentExit::kBye);
}

TEST(WireSecurity, ASlowLorisClientDoesNotDelayTheController) {
  Agent a(/*handshake_ms=*/1500);
  wire::Fd loris = a.dial();
  std::atomic<bool> stop{false};
  std::thread trickle([&] {  // a valid-looking hello, one byte every 50 ms
    Json c = {{"protocol", wire::kProtocolVersion}, {"role", "controller"}, {"purpose", "control"},
              {"nonce", std::string(64, '7')}};
    std::string bytes = wire::encode_frame({wire::FrameType::kHello, c.dump()});
    for (size_t i = 0; i < bytes.size() && !stop; ++i) {
      if (::send(loris.get(), &bytes[i], 1, MSG_NOSIGNAL) != 1) break;
      std::this_thread::sleep_for(50ms);
    }
  });
  std::this_thread::sleep_for(100ms);  // the loris is in its handshake
  auto t0 = wire::Clock::now();
  auto fd = a.dial();
  EXPECT_EQ(a.controller_hello(fd.get()).value("name", ""), "loop");
  EXPECT_LT(ms_since(t0), 1000);  // not after the loris's deadline
  bye(fd.get());
  EXPECT_EQ(a.exit.get(), agent::AgentExit::kBye);
  stop = true;
  trickle.join();
}

TEST(WireSecurity, ATricklingHandshakeIsCutOffAtItsDeadline) {
  Agent a(/*handshake_ms=*/400);
  wire::Fd loris = a.dial();
  auto t0 = wire::Clock::now();
  // A hello header announcing 100 bytes, then one payload byte every 50 ms: progress, but the
  // hello would take 5 s to arrive.
  std::string header("\x00\x00\x00\x64\x01", 5);
  ASSERT_EQ(::send(loris.get(), header.data(), header.size(), MSG_NOSIGNAL), 5);
  for (int i = 0; i < 40; ++i) {
    char x = 'x', c;
    if (::send(loris.get(), &x, 1, MSG_NOSIGNAL) != 1) break;
    if (::recv(loris.get(), &c, 1, MSG_DONTWAIT) >= 0 || errno == ECONNRESET) break;  // error frame or close
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_GE(ms_since(t0), 350);
  EXPECT_LT(ms_since(t0), 1200);
  auto fd = a.dial();
  a.controller_hello(fd.get());
  bye(fd.get());
  a.exit.get();
}

// At the cap the oldest pending handshake is closed to make room, never the new arrival: held
// connections cannot keep the controller out (they used to: the 3rd connection was closed at
// accept, and so was the controller's).
TEST(WireSecurity, AtThePendingCapTheOldestHandshakeMakesRoomForTheNewest) {
  Agent a(/*handshake_ms=*/3000, /*max_pending=*/2);
  wire::Fd s1 = a.dial();
  std::this_thread::sleep_for(50ms);
  wire::Fd s2 = a.dial();
  std::this_thread::sleep_for(50ms);  // both are in their handshakes, s1 the older
  wire::Fd s3 = a.dial();
  auto t0 = wire::Clock::now();
  EXPECT_TRUE(closed_within(s1.get(), 1000));  // the oldest went
  EXPECT_LT(ms_since(t0), 1000);
  EXPECT_FALSE(closed_within(s3.get(), 100));  // the newest stays
  // s2 and s3 still hold both slots: the controller gets in all the same, at once.
  t0 = wire::Clock::now();
  auto fd = a.dial();
  a.controller_hello(fd.get());
  EXPECT_LT(ms_since(t0), 1000);
  bye(fd.get());
  a.exit.get();
  bool logged = false;
  for (const auto& l : a.log) logged = logged || l.find("(the cap)") != std::string::npos;
  EXPECT_TRUE(logged);
}

// Holds n connections to port: silent ones, and every tenth trickling a valid-looking hello a
// byte every 100 ms (both slow-loris shapes). The listener keeps every one of them open until it
// closes them itself.
struct HeldConnections {
  std::vector<wire::Fd> fds;
  std::atomic<bool> stop{false};
  std::thread trickle;
  HeldConnections(uint16_t port, int n, const std::string& purpose) {
    for (int i = 0; i < n; ++i) {
      auto c = tcp::connect_tcp("127.0.0.1", port, "", 2000);
      if (c.status != tcp::ConnectStatus::kOpen) {
        ADD_FAILURE() << "connection " << i << ": " << c.message;
        break;
      }
      fds.push_back(std::move(c.fd));
    }
    Json h = {{"protocol", wire::kProtocolVersion},
              {"role", "peer"},
              {"purpose", purpose},
              {"nonce", std::string(64, '7')}};
    trickle = std::thread([this, bytes = wire::encode_frame({wire::FrameType::kHello, h.dump()})] {
      for (size_t b = 0; b < bytes.size() && !stop; ++b) {
        for (size_t i = 0; i < fds.size(); i += 10)
          (void)!::send(fds[i].get(), &bytes[b], 1, MSG_NOSIGNAL);
        std::this_thread::sleep_for(100ms);
      }
    });
    std::this_thread::sleep_for(200ms);  // the listener has accepted them all
  }
  ~HeldConnections() {
    stop = true;
    trickle.join();
  }
};

// Issue #19: ~32 held connections made the real controller fail with pair.agent_unreachable.
TEST(WireSecurity, FiveHundredHeldConnectionsDoNotKeepTheControllerOut) {
  Agent a;  // the defaults: 5 s handshakes, the default cap
  HeldConnections held(a.port, 500, "control");
  pair::AgentClient client("hostb", a.token);
  client.set_hello({{"port", a.port}, {"addresses", {"127.0.0.1"}}});
  auto t0 = wire::Clock::now();
  client.connect(3000);
  EXPECT_LT(ms_since(t0), 1500);
  EXPECT_EQ(client.agent_info().value("name", ""), "loop");
  EXPECT_EQ(client.control_addr(), "127.0.0.1");
  client.bye();
  EXPECT_EQ(a.exit.get(), agent::AgentExit::kBye);
}

// With a cap far below the flood, the newest arrival still gets in: the flood's oldest make room.
TEST(WireSecurity, AFloodAboveTheCapStillAdmitsTheController) {
  Agent a(/*handshake_ms=*/5000, /*max_pending=*/64);
  HeldConnections held(a.port, 300, "control");
  auto fd = a.dial();
  auto t0 = wire::Clock::now();
  a.controller_hello(fd.get());
  EXPECT_LT(ms_since(t0), 1000);
  bye(fd.get());
  a.exit.get();
}

// Issue #19: ~128 held connections on a TCP test server gave a false pair.no_reachable_link.
TEST(WireSecurity, FiveHundredHeldConnectionsDoNotBlockATestServer) {
  std::string token = wire::generate_token();
  tcp::TcpTestServer server("127.0.0.1", token, 5000);
  HeldConnections held(server.port(), 500, "tcp_ping");
  tcp::LinkTestSpec s;
  s.peer_addr = s.local_addr = "127.0.0.1";
  s.port = server.port();
  s.token = token;
  s.pings = 20;
  s.streams = 4;
  s.duration_ms = 50;
  auto m = tcp::measure_link(s);
  EXPECT_EQ(m.status, tcp::ConnectStatus::kOpen) << m.error;
  EXPECT_EQ(m.rtt.count, 20);
  EXPECT_GT(m.multi_stream_gbit_s, 0);
}

TEST(WireSecurity, ProbeAndMeasureTargetsMustBeTheSessionsPeers) {
  Agent a;
  auto fd = a.dial();
  a.controller_hello(fd.get());
  Json probe = {{"addr", "127.0.0.1"}, {"port", 9}, {"local_addr", "127.0.0.1"}, {"timeout_ms", 200}};
  auto r = call(fd.get(), "port_probe", probe);  // before set_peers: nothing is a peer
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error_code, "agent.target_not_peer");
  r = call(fd.get(), "set_peers", {{"addresses", {"127.0.0.1"}}});
  ASSERT_TRUE(r.ok) << r.error_message;
  r = call(fd.get(), "set_peers", {{"addresses", {"10.0.0.1"}}});  // once per session
  EXPECT_EQ(r.error_code, "agent.peers_already_set");
  r = call(fd.get(), "port_probe", probe);
  EXPECT_TRUE(r.ok) << r.error_message;  // refused or open: the probe ran
  probe["addr"] = "10.0.0.1";
  r = call(fd.get(), "port_probe", probe);
  EXPECT_EQ(r.error_code, "agent.target_not_peer");
  EXPECT_NE(r.error_message.find("10.0.0.1"), std::string::npos);
  r = call(fd.get(), "tcp_measure", {{"peer_addr", "10.0.0.2"}, {"port", 5201}, {"local_addr", "127.0.0.1"}});
  EXPECT_EQ(r.error_code, "agent.target_not_peer");
  r = call(fd.get(), "allreduce", {{"transport", "raw-exchange"}, {"rank", 1}, {"local_addr", "127.0.0.1"},
                                   {"peer_addr", "192.168.1.1"}, {"port", 5000}, {"sizes_bytes", {4096u}}});
  EXPECT_EQ(r.error_code, "agent.target_not_peer");
  // A hostile ring: the right neighbour is a peer, but rank 0 (where Gloo's store makes every rank
  // connect) is not. Every ring address is checked, not only peer_addr.
  for (size_t outside : {0, 3}) {
    Json ring = {"127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1"};
    ring[outside] = "10.9.9.9";
    r = call(fd.get(), "allreduce",
             {{"transport", "gloo-tcp"},
              {"world_size", 4},
              {"rank", 1},
              {"local_addr", "127.0.0.1"},
              {"peer_addr", "127.0.0.1"},
              {"ring_addrs", ring},
              {"port", 5000},
              {"sizes_bytes", {4096u}},
              {"timeout_ms", 300}});
    EXPECT_EQ(r.error_code, "agent.target_not_peer")
        << "ring_addrs[" << outside << "]: " << r.error_message;
    EXPECT_NE(r.error_message.find("10.9.9.9"), std::string::npos) << r.error_message;
  }
  bye(fd.get());
  a.exit.get();
}

void expect_refused(const Json& extra, const std::string& field) {
  Json args = {{"rank", 0}, {"local_addr", "127.0.0.1"}, {"peer_addr", "127.0.0.1"}, {"port", 5000},
               {"sizes_bytes", {4096u}}, {"extra", extra}};
  try {
    agent::parse_transport_args(args);
    ADD_FAILURE() << "accepted " << extra.dump();
  } catch (const wire::WireError& e) {
    EXPECT_EQ(e.kind(), wire::WireErrorKind::kBadMessage);
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

TEST(WireSecurity, RdmaPortFieldsFromThePeerAreRangeChecked) {
  auto ok = agent::parse_transport_args({{"rank", 0}, {"local_addr", "127.0.0.1"}, {"peer_addr", "127.0.0.1"},
                                         {"port", 5000}, {"sizes_bytes", {4096u}},
                                         {"extra", {{"hca", "mlx5_0"}, {"ib_port", 1}, {"gid_index", 3},
                                                    {"link_layer", "Ethernet"}, {"rate_gbps", 200}}}});
  EXPECT_EQ(ok.rdma.hca, "mlx5_0");
  EXPECT_EQ(ok.rdma.gid_index, 3);
  expect_refused({{"hca", "../../etc"}}, "extra.hca");
  expect_refused({{"hca", std::string(65, 'm')}}, "'hca'");
  expect_refused({{"hca", 5}}, "'hca'");
  expect_refused({{"ib_port", 0}}, "'ib_port'");
  expect_refused({{"ib_port", 256}}, "'ib_port'");
  expect_refused({{"gid_index", 256}}, "'gid_index'");
  expect_refused({{"gid_index", -2}}, "'gid_index'");
  expect_refused({{"gid_index", "3"}}, "'gid_index'");
  expect_refused({{"rate_gbps", "fast"}}, "extra.rate_gbps");
  expect_refused({{"NCCL_IB_HCA", "x"}}, "extra.NCCL_IB_HCA");
  expect_refused(Json::array(), "'extra'");
}

// The old server stopped serving after 256 connections in its life; connections are now capped
// at once, not in total.
TEST(WireSecurity, TestServerHasNoLifetimeConnectionCap) {
  std::string token = wire::generate_token();
  tcp::TcpTestServer server("127.0.0.1", token, 5000);
  for (int i = 0; i < 300; ++i) {
    auto c = tcp::connect_tcp("127.0.0.1", server.port(), "", 2000);
    ASSERT_EQ(c.status, tcp::ConnectStatus::kOpen) << "connection " << i << ": " << c.message;
    if (i % 50 == 49) {
      tcp::peer_handshake(c.fd.get(), token, "ping", 2000);  // still served
    }
  }
  tcp::LinkTestSpec s;
  s.peer_addr = s.local_addr = "127.0.0.1";
  s.port = server.port();
  s.token = token;
  s.pings = 20;
  s.streams = 1;
  s.duration_ms = 50;
  auto m = tcp::measure_link(s);
  EXPECT_EQ(m.status, tcp::ConnectStatus::kOpen) << m.error;
}

}  // namespace
}  // namespace fabkit
