// Slow-loris clients on every authenticated listener besides the agent's control port (that one
// is in wire_security_test.cc): the all-reduce / NCCL rendezvous (accept_peer), the Gloo store's
// rank 0 (accept_peers) and the RDMA endpoint channel. Each listener used to handshake one
// connection at a time, so every silent client in front of the real peer cost it a whole
// handshake deadline (2 s, 5 s on the RDMA channel); then each got a thread, but only 16 (8 on
// the RDMA channel) at once, the rest closed at accept. Now every connection is accepted and
// handshakes beside the others, the oldest closed at the cap (wire/handshake_gate.h).
#include <gtest/gtest.h>

#include <sys/socket.h>

#include <atomic>
#include <fstream>
#include <future>
#include <thread>

#include "fabric/agent/agent_rdma.h"
#include "fabric/allreduce/allreduce_types.h"
#include "fabric/allreduce/session_socket.h"
#include "fabric/pair/rdma_rc_plan.h"
#include "fabric/tcp/tcp_socket.h"
#include "fabric/wire/frame.h"
#include "fabric/wire/handshake.h"
#include "tests/support/ttar.h"
#include "verbs/fake_verbs_api.h"

namespace fabkit {
namespace {

using namespace std::chrono_literals;
// The generated form (64 hex digits): its own key, no scrypt in the tests' deadlines.
const std::string kToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

int64_t ms_since(wire::Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(wire::Clock::now() - t0).count();
}

wire::Fd dial(uint16_t port) {
  auto c = tcp::connect_tcp("127.0.0.1", port, "", 2000);
  EXPECT_EQ(c.status, tcp::ConnectStatus::kOpen) << c.message;
  return std::move(c.fd);
}

// Two silent connections and one that trickles a valid-looking hello a byte every 50 ms: in the
// old one-at-a-time loop they held the real peer for 3 handshake deadlines.
struct Lorises {
  std::vector<wire::Fd> silent;
  wire::Fd trickler;
  std::atomic<bool> stop{false};
  std::thread trickle;
  explicit Lorises(uint16_t port) {
    silent.push_back(dial(port));
    silent.push_back(dial(port));
    trickler = dial(port);
    trickle = std::thread([this] {
      Json c = {{"protocol", wire::kProtocolVersion},
                {"role", "peer"},
                {"purpose", "allreduce"},
                {"nonce", std::string(64, '7')}};
      std::string bytes = wire::encode_frame({wire::FrameType::kHello, c.dump()});
      for (size_t i = 0; i < bytes.size() && !stop; ++i) {
        if (::send(trickler.get(), &bytes[i], 1, MSG_NOSIGNAL) != 1) break;
        std::this_thread::sleep_for(50ms);
      }
    });
    std::this_thread::sleep_for(100ms);  // all three are accepted and in their handshakes
  }
  ~Lorises() {
    stop = true;
    trickle.join();
  }
};

TEST(SlowLoris, AllreduceListenerAdmitsTheRealPeerWithoutWaitingOutTheLorises) {
  wire::Fd listener = fabric::listen_on("127.0.0.1", 0, "");
  uint16_t port = tcp::local_port(listener.get());
  fabric::HelloInfo mine{0, 2, 42};
  auto accepted = std::async(std::launch::async, [&] {
    fabric::HelloInfo theirs;
    wire::Fd fd = fabric::accept_peer(listener.get(), kToken, mine, 10000, &theirs);
    return std::make_pair(fd.valid(), theirs.rank);
  });
  Lorises lorises(port);
  auto t0 = wire::Clock::now();
  wire::Fd fd =
      fabric::connect_peer("127.0.0.1", port, "127.0.0.1", "", kToken, {1, 2, 42}, 5000, nullptr);
  auto [ok, rank] = accepted.get();
  EXPECT_TRUE(ok);
  EXPECT_EQ(rank, 1u);
  EXPECT_LT(ms_since(t0), 1000);  // one handshake deadline is 2000 ms
}

// Issue #19's flood shape on the all-reduce listener: 500 connections held open (it used to close
// everything past 16 pending at accept, the real peer's connection included).
TEST(SlowLoris, AllreduceListenerAdmitsTheRealPeerPastFiveHundredHeldConnections) {
  wire::Fd listener = fabric::listen_on("127.0.0.1", 0, "");
  uint16_t port = tcp::local_port(listener.get());
  fabric::HelloInfo mine{0, 2, 42};
  auto accepted = std::async(std::launch::async, [&] {
    fabric::HelloInfo theirs;
    wire::Fd fd = fabric::accept_peer(listener.get(), kToken, mine, 15000, &theirs);
    return std::make_pair(fd.valid(), theirs.rank);
  });
  std::vector<wire::Fd> held;
  for (int i = 0; i < 500; ++i) held.push_back(dial(port));
  std::this_thread::sleep_for(300ms);  // all accepted and pending
  auto t0 = wire::Clock::now();
  wire::Fd fd =
      fabric::connect_peer("127.0.0.1", port, "127.0.0.1", "", kToken, {1, 2, 42}, 5000, nullptr);
  auto [ok, rank] = accepted.get();
  EXPECT_TRUE(ok);
  EXPECT_EQ(rank, 1u);
  EXPECT_LT(ms_since(t0), 1500);
}

TEST(SlowLoris, StoreRankZeroAdmitsEveryRankPastTheLorises) {
  wire::Fd listener = fabric::listen_on("127.0.0.1", 0, "");
  uint16_t port = tcp::local_port(listener.get());
  auto accepted = std::async(std::launch::async, [&] {
    return fabric::accept_peers(listener.get(), 2, kToken, {0, 3, 42}, 10000);
  });
  Lorises lorises(port);
  auto t0 = wire::Clock::now();
  auto peer = [&](uint32_t rank) {
    return fabric::connect_peer("127.0.0.1", port, "127.0.0.1", "", kToken, {rank, 3, 42}, 5000,
                                nullptr);
  };
  auto second = std::async(std::launch::async, peer, 2u);
  wire::Fd first = peer(1);
  second.get();
  auto peers = accepted.get();
  ASSERT_EQ(peers.size(), 2u);
  EXPECT_NE(peers[0].hello.rank, peers[1].hello.rank);
  EXPECT_LT(ms_since(t0), 1000);
}

TEST(SlowLoris, RdmaEndpointChannelAdmitsTheRealPeerWithoutWaitingOutTheLorises) {
  std::ifstream in(testing::project_fixtures() / "rdma" / "cx6_ib_hdr.json");
  verbs::FakeVerbsApi api(verbs::load_fake_devices(Json::parse(in)));
  uint16_t port = 0;
  {
    wire::Fd probe = tcp::listen_tcp("127.0.0.1", 0);
    port = tcp::local_port(probe.get());
  }
  pair::RcPortPair p{"mlx5_0", "mlx5_1", 1, 1, -1, -1, "InfiniBand", std::nullopt, ""};
  auto args = [&](bool client) {
    Json j = pair::rc_request_args(p, client, "send_lat", "127.0.0.1", "127.0.0.1", port, 15000);
    return agent::parse_rc_args(j);
  };
  auto server =
      std::async(std::launch::async, [&] { return agent::run_rc_op(api, args(false), kToken); });
  // Wait until the server listens, then occupy it before the real client comes.
  for (int i = 0; i < 100; ++i) {
    auto c = tcp::connect_tcp("127.0.0.1", port, "", 200);
    if (c.status == tcp::ConnectStatus::kOpen) break;
    std::this_thread::sleep_for(20ms);
  }
  Lorises lorises(port);
  auto t0 = wire::Clock::now();
  Json client = agent::run_rc_op(api, args(true), kToken);
  Json srv = server.get();
  EXPECT_EQ(client["channel"], "ok") << client.dump(2);
  EXPECT_EQ(srv["channel"], "ok") << srv.dump(2);
  EXPECT_LT(ms_since(t0), 2500);  // one channel handshake deadline is 5000 ms
}

}  // namespace
}  // namespace fabkit
