// The agent and the TCP tests over loopback, in-process: the session handshake (right token,
// wrong token, wrong protocol), request validation, the measurement figures' consistency and the
// connect classification. The netns integration tests (tests/integration/pair) cover real hosts.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>

#include <cctype>
#include <future>
#include <thread>

#include "fabric/agent/agent.h"
#include "fabric/agent/agent_commands.h"
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

struct RunningAgent {
  std::promise<uint16_t> port;
  std::future<agent::AgentExit> exit;
  std::string token = wire::generate_token();
  explicit RunningAgent(int accept_ms = 5000, int idle_ms = 5000) {
    agent::AgentOptions o;
    o.bind_addr = "127.0.0.1";
    o.token = token;
    o.name = "loop";
    o.accept_timeout_ms = accept_ms;
    o.idle_timeout_ms = idle_ms;
    exit = std::async(std::launch::async, [this, o] {
      return agent::run_agent(o, [this](const Json& h) { port.set_value(h["port"].get<uint16_t>()); },
                              [](const std::string&) {});
    });
  }
};

wire::Fd dial(uint16_t port) {
  auto c = tcp::connect_tcp("127.0.0.1", port, "", 2000);
  EXPECT_EQ(c.status, tcp::ConnectStatus::kOpen) << c.message;
  return std::move(c.fd);
}

// The controller's side of the handshake; returns the agent's welcome info.
Json hello(int fd, const std::string& token) {
  return wire::client_handshake(fd, token, "controller", "control", Json::object(), wire::deadline_in_ms(2000));
}

// A client that does not know the token: it sends a made-up proof after the agent's hello.
// Returns the agent's answer to it.
wire::Frame forged_proof(int fd, int protocol = wire::kProtocolVersion) {
  Json c = {{"protocol", protocol}, {"role", "controller"}, {"purpose", "control"}, {"nonce", std::string(64, '1')}};
  wire::write_frame(fd, wire::Frame{wire::FrameType::kHello, c.dump()}, wire::deadline_in_ms(2000));
  wire::Frame reply = wire::read_frame(fd, wire::deadline_in_ms(2000));
  if (reply.type != wire::FrameType::kHello) return reply;
  Json a = {{"proof", std::string(64, '0')}};
  wire::write_frame(fd, wire::Frame{wire::FrameType::kAuth, a.dump()}, wire::deadline_in_ms(2000));
  return wire::read_frame(fd, wire::deadline_in_ms(2000));
}

wire::Response call(int fd, const std::string& op, const Json& args, int timeout_ms = 10000) {
  static uint64_t id = 1;
  wire::write_frame(fd, wire::make_frame(wire::Request{id++, op, args}), wire::deadline_in_ms(2000));
  return wire::parse_response(wire::read_frame(fd, wire::deadline_in_ms(timeout_ms)));
}

TEST(Agent, WrongTokenIsRefusedByNameThenTheRightOneIsServed) {
  RunningAgent a;
  uint16_t port = a.port.get_future().get();
  {
    auto fd = dial(port);
    auto t0 = wire::Clock::now();
    wire::Frame f = forged_proof(fd.get());
    ASSERT_EQ(f.type, wire::FrameType::kError);
    EXPECT_EQ(wire::parse_error(f).code, "wire.bad_token");
    EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(wire::Clock::now() - t0).count(), 1000);
  }
  {
    // A client with another token proves first, and the agent refuses its proof by name.
    auto fd = dial(port);
    std::string wrong = a.token;
    wrong[0] = wrong[0] == 'a' ? 'b' : 'a';
    try {
      hello(fd.get(), wrong);
      ADD_FAILURE() << "the handshake with a wrong token succeeded";
    } catch (const wire::WireError& e) {
      EXPECT_EQ(e.kind(), wire::WireErrorKind::kBadToken) << e.what();
    }
  }
  {
    auto fd = dial(port);
    wire::Frame f = forged_proof(fd.get(), wire::kProtocolVersion + 1);
    EXPECT_EQ(wire::parse_error(f).code, "wire.version_mismatch");
  }
  auto fd = dial(port);
  EXPECT_EQ(hello(fd.get(), a.token).value("name", ""), "loop");
  // Unknown op and bad arguments: an error answer, the session goes on.
  auto r = call(fd.get(), "rm -rf /", Json::object());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error_code, "wire.bad_message");
  r = call(fd.get(), "tcp_serve", {{"addr", "localhost"}});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error_message.find("'addr'"), std::string::npos);
  r = call(fd.get(), "tcp_serve", {{"addr", "127.0.0.1"}});
  ASSERT_TRUE(r.ok) << r.error_message;
  wire::write_frame(fd.get(), wire::make_bye(), wire::deadline_in_ms(1000));
  ASSERT_EQ(a.exit.wait_for(3s), std::future_status::ready);
  EXPECT_EQ(a.exit.get(), agent::AgentExit::kBye);
}

TEST(Agent, ExitsWhenTheControllerDropsOrNobodyComes) {
  RunningAgent a;
  uint16_t port = a.port.get_future().get();
  {
    auto fd = dial(port);
    hello(fd.get(), a.token);
  }  // closed without bye
  ASSERT_EQ(a.exit.wait_for(3s), std::future_status::ready);
  EXPECT_EQ(a.exit.get(), agent::AgentExit::kControllerDropped);

  RunningAgent lonely(/*accept_ms=*/200);
  auto t0 = wire::Clock::now();
  EXPECT_EQ(lonely.exit.get(), agent::AgentExit::kNoController);
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(wire::Clock::now() - t0).count(), 2000);

  RunningAgent idle(5000, /*idle_ms=*/200);
  auto fd = dial(idle.port.get_future().get());
  hello(fd.get(), idle.token);
  ASSERT_EQ(idle.exit.wait_for(3s), std::future_status::ready);
  EXPECT_EQ(idle.exit.get(), agent::AgentExit::kIdleTimeout);
}

// Every byte a real agent sends a client that does not hold the token: its hello (protocol, role,
// a nonce) and, after a wrong proof, an error frame and the close. Nothing in them is derived
// from the token, so there is nothing to test token guesses against offline (the agent used to
// send HMAC(token, ...) in its first answer).
TEST(Agent, AnUnauthenticatedClientReceivesNothingDerivedFromTheToken) {
  RunningAgent a;
  auto fd = dial(a.port.get_future().get());
  Json h = {{"protocol", wire::kProtocolVersion},
            {"role", "controller"},
            {"purpose", "control"},
            {"nonce", std::string(64, '1')}};
  wire::write_frame(fd.get(), wire::Frame{wire::FrameType::kHello, h.dump()},
                    wire::deadline_in_ms(2000));
  Json a_proof = {{"proof", std::string(64, '0')}};
  wire::write_frame(fd.get(), wire::Frame{wire::FrameType::kAuth, a_proof.dump()},
                    wire::deadline_in_ms(2000));
  std::string received;  // every byte until the agent closes
  auto deadline = wire::deadline_in_ms(3000);
  for (char buf[4096];;) {
    wire::wait_fd(fd.get(), POLLIN, deadline, "the agent's answers");
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n <= 0) break;
    received.append(buf, static_cast<size_t>(n));
  }
  wire::FrameDecoder d;
  d.feed(received.data(), received.size());
  std::vector<wire::Frame> frames;
  while (auto f = d.next()) frames.push_back(*f);
  EXPECT_EQ(d.buffered_bytes(), 0u);
  ASSERT_EQ(frames.size(), 2u) << received;
  ASSERT_EQ(frames[0].type, wire::FrameType::kHello);
  Json hello_body = Json::parse(frames[0].payload);
  EXPECT_EQ(hello_body, (Json{{"protocol", wire::kProtocolVersion},
                              {"role", "agent"},
                              {"nonce", hello_body["nonce"]}}));
  ASSERT_EQ(frames[1].type, wire::FrameType::kError);
  Json error_body = Json::parse(frames[1].payload);
  EXPECT_EQ(error_body["code"], "wire.bad_token");
  EXPECT_EQ(error_body.size(), 2u);  // code and message
  // The only 32-byte value in all of it is the agent's fresh nonce; the message holds no hex run.
  const std::string nonce = hello_body["nonce"].get<std::string>();
  std::string rest = received;
  rest.erase(rest.find(nonce), nonce.size());
  size_t run = 0, longest = 0;
  for (char ch : rest) {
    run = std::isxdigit(static_cast<unsigned char>(ch)) ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  EXPECT_LT(longest, 16u) << rest;
  EXPECT_EQ(received.find(a.token), std::string::npos);
  EXPECT_EQ(received.find("proof"), std::string::npos);
}

// A request that takes seconds (rank 0 of an all-reduce waiting for a peer that never comes):
// the agent sends a heartbeat every second until its answer, so the controller tells it from a
// stopped agent.
TEST(Agent, SendsHeartbeatsWhileARequestRuns) {
  RunningAgent a;
  auto fd = dial(a.port.get_future().get());
  hello(fd.get(), a.token);
  ASSERT_TRUE(call(fd.get(), "set_peers", {{"addresses", {"127.0.0.1"}}}).ok);
  uint16_t port;
  {
    auto probe = tcp::listen_tcp("127.0.0.1", 0);
    port = tcp::local_port(probe.get());
  }
  Json args = {{"transport", "raw-exchange"}, {"rank", 0},    {"local_addr", "127.0.0.1"},
               {"peer_addr", "127.0.0.1"},    {"port", port}, {"sizes_bytes", {4096u}},
               {"timeout_ms", 2600},          {"iters", 1},   {"warmup_iters", 0}};
  wire::write_frame(fd.get(), wire::make_frame(wire::Request{77, "allreduce", args}),
                    wire::deadline_in_ms(2000));
  int beats = 0;
  wire::Frame f;
  for (;;) {
    f = wire::read_frame(fd.get(), wire::deadline_in_ms(1500));  // never silent that long
    if (f.type != wire::FrameType::kHeartbeat) break;
    EXPECT_EQ(wire::parse_heartbeat(f).id, 77u);
    ++beats;
  }
  EXPECT_GE(beats, 2);
  auto r = wire::parse_response(f);
  EXPECT_EQ(r.id, 77u);
  wire::write_frame(fd.get(), wire::make_bye(), wire::deadline_in_ms(1000));
  EXPECT_EQ(a.exit.get(), agent::AgentExit::kBye);
}

// The controller's side: an agent that goes silent mid-request (its process stopped) is named
// pair.agent_unresponsive after the liveness bound, not after the request's own (300 s for a
// transport by default). Heartbeats before the silence keep it alive until then.
TEST(AgentClient, ASilentAgentIsUnresponsiveAfterTheLivenessBoundNotTheRequests) {
  const std::string token = wire::generate_token();
  wire::Fd listener = tcp::listen_tcp("127.0.0.1", 0);
  const uint16_t port = tcp::local_port(listener.get());
  std::thread fake([&] {
    wire::Fd c = tcp::accept_until(listener.get(), wire::deadline_in_ms(5000));
    auto claims = wire::server_handshake(
        c.get(), token, "agent", [](const std::string&) { return true; },
        wire::deadline_in_ms(3000));
    wire::write_frame(c.get(), wire::welcome_frame(claims, {{"name", "fake"}}),
                      wire::deadline_in_ms(1000));
    wire::read_frame(c.get(), wire::deadline_in_ms(5000));  // the request
    for (int i = 0; i < 3; ++i) {
      wire::write_frame(c.get(), wire::make_frame(wire::Heartbeat{1}), wire::deadline_in_ms(1000));
      std::this_thread::sleep_for(200ms);
    }
    try {  // then nothing, as a stopped process: until the controller hangs up
      wire::read_frame(c.get(), wire::deadline_in_ms(8000));
    } catch (const wire::WireError&) {
    }
  });
  pair::AgentClient client("hostb", token);
  client.set_hello({{"port", port}, {"addresses", {"127.0.0.1"}}});
  client.connect(3000);
  client.set_liveness_ms(500);
  client.send("allreduce", Json::object());
  auto t0 = wire::Clock::now();
  try {
    client.receive(30000);
    ADD_FAILURE() << "an answer from a silent agent";
  } catch (const pair::StepError& e) {
    EXPECT_EQ(e.code(), "pair.agent_unresponsive") << e.what();
    EXPECT_EQ(e.host(), "hostb");
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wire::Clock::now() - t0).count();
  EXPECT_GE(ms, 800);   // three heartbeats 200 ms apart, then 500 ms of silence
  EXPECT_LT(ms, 3000);  // far below the request's 30 s
  client.bye();
  fake.join();
}

TEST(Agent, OversizedFrameFromTheControllerEndsTheSessionWithANamedError) {
  RunningAgent a;
  auto fd = dial(a.port.get_future().get());
  hello(fd.get(), a.token);
  std::string h("\x7f\x00\x00\x00\x02", 5);
  wire::write_all(fd.get(), h.data(), h.size(), wire::deadline_in_ms(1000), "test");
  wire::Frame f = wire::read_frame(fd.get(), wire::deadline_in_ms(2000));
  EXPECT_EQ(wire::parse_error(f).code, "wire.oversized");
  EXPECT_EQ(a.exit.get(), agent::AgentExit::kProtocolError);
}

TEST(TcpTest, LoopbackFiguresAreSelfConsistent) {
  std::string token = wire::generate_token();
  tcp::TcpTestServer server("127.0.0.1", token, 5000);
  tcp::LinkTestSpec s;
  s.peer_addr = "127.0.0.1";
  s.port = server.port();
  s.local_addr = "127.0.0.1";
  s.token = token;
  s.pings = 200;
  s.streams = 2;
  s.duration_ms = 100;
  auto m = tcp::measure_link(s);
  ASSERT_EQ(m.status, tcp::ConnectStatus::kOpen) << m.error;
  EXPECT_EQ(m.rtt.count, 200);
  EXPECT_GT(m.rtt.min_us, 0);
  EXPECT_LE(m.rtt.min_us, m.rtt.median_us);
  EXPECT_LE(m.rtt.median_us, m.rtt.p99_us);
  EXPECT_LE(m.rtt.p99_us, m.rtt.max_us);
  // The histogram holds every sample, and its percentile buckets hold the exact percentiles.
  EXPECT_EQ(m.rtt.histogram.total(), 200u);
  int med = m.rtt.histogram.percentile_bucket(0.5);
  EXPECT_LE(LatencyHistogram::lower_edge(med), m.rtt.median_us);
  EXPECT_LT(m.rtt.median_us, LatencyHistogram::lower_edge(med + 1));
  EXPECT_GT(m.rtt.histogram.count(LatencyHistogram::bucket_of(m.rtt.max_us)), 0u);
  EXPECT_GT(m.single_stream_gbit_s, 0);
  EXPECT_GT(m.multi_stream_gbit_s, 0);
  EXPECT_GT(m.single_stream_bytes, 0u);
  // A physical bound for loopback on any machine this runs on: memory copies, < 2 Tbit/s.
  EXPECT_LT(m.single_stream_gbit_s, 2000);

  tcp::LinkTestSpec wrong = s;
  wrong.token = wire::generate_token();
  auto w = tcp::measure_link(wrong);
  EXPECT_NE(w.status, tcp::ConnectStatus::kOpen);
  EXPECT_FALSE(w.error.empty());
  // The client proves first; the server refuses its proof by name and counts the connection.
  for (int i = 0; i < 100 && server.rejected_connections() == 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_GE(server.rejected_connections(), 1u);
  EXPECT_NE(w.error.find("wire.bad_token"), std::string::npos) << w.error;
}

TEST(TcpTest, PingStatsUseNearestRank) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  auto s = tcp::ping_stats(v);
  EXPECT_DOUBLE_EQ(s.median_us, 50);
  EXPECT_DOUBLE_EQ(s.p99_us, 99);
  EXPECT_DOUBLE_EQ(s.max_us, 100);
  EXPECT_EQ(tcp::ping_stats({}).count, 0);
}

TEST(TcpSocket, ConnectClassification) {
  EXPECT_EQ(tcp::classify_connect_errno(ETIMEDOUT), tcp::ConnectStatus::kBlocked);
  EXPECT_EQ(tcp::classify_connect_errno(ECONNREFUSED), tcp::ConnectStatus::kClosed);
  EXPECT_EQ(tcp::classify_connect_errno(ENETUNREACH), tcp::ConnectStatus::kUnreachable);
  EXPECT_EQ(tcp::classify_connect_errno(EACCES), tcp::ConnectStatus::kError);
  // Nothing listening on a freshly released loopback port: RST -> closed, quickly.
  uint16_t port;
  {
    auto fd = tcp::listen_tcp("127.0.0.1", 0);
    port = tcp::local_port(fd.get());
  }
  auto c = tcp::connect_tcp("127.0.0.1", port, "", 1000);
  EXPECT_EQ(c.status, tcp::ConnectStatus::kClosed) << c.message;
  EXPECT_NE(c.message.find("refused"), std::string::npos);
}

}  // namespace
}  // namespace fabkit
