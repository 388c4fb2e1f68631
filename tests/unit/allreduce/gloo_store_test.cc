// The token-authenticated rendezvous store Gloo runs on (no shared filesystem needed).
#include <gtest/gtest.h>

#include <future>

#include "fabric/allreduce/allreduce_types.h"
#include "fabric/allreduce/gloo_store.h"
#include "fabric/wire/frame.h"
#include "loopback_harness.h"

namespace fabkit::fabric {
namespace {

// Tokens of the generated form (64 hex digits) are their own key: no scrypt in these deadlines.
const std::string kTok = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const std::string kOtherTok = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";

TokenStoreOptions opts(int rank, uint16_t port, const std::string& token, int timeout_ms = 10000) {  // generous: ctest -j2 runs it beside heavy tests
  TokenStoreOptions o;
  o.rank = rank;
  o.world_size = 2;
  o.local_addr = "127.0.0.1";
  o.rank0_addr = "127.0.0.1";
  o.port = port;
  o.token = token;
  o.plan_digest = 42;
  o.timeout_ms = timeout_ms;
  return o;
}

TEST(TokenStore, KeysCrossBetweenRanksAndGetWaits) {
  uint16_t port = testing::free_port();
  auto rank0 = std::async(std::launch::async, [&] {
    TokenStore s(opts(0, port, kTok));
    s.set("0", {'a', 'b'});
    auto v = s.get("1");  // set by rank 1 later
    return std::string(v.begin(), v.end());
  });
  std::string from0;
  {
    TokenStore s(opts(1, port, kTok));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    s.set("1", {'x', 'y', 'z'});
    auto v = s.get("0");
    from0.assign(v.begin(), v.end());
    // Keep the connection until rank 0 has read our key.
    rank0.wait();
  }
  EXPECT_EQ(rank0.get(), "xyz");
  EXPECT_EQ(from0, "ab");
}

TEST(TokenStore, WrongTokenIsRejected) {
  uint16_t port = testing::free_port();
  auto rank0 = std::async(std::launch::async, [&] {
    try {
      TokenStore s(opts(0, port, kTok, 1500));  // reports token_rejected at its deadline
      return std::string("accepted");
    } catch (const PeerError& e) {
      return e.kind();
    }
  });
  try {
    TokenStore s(opts(1, port, kOtherTok, 1500));
    FAIL() << "wrong token accepted";
  } catch (const PeerError& e) {
    EXPECT_EQ(e.kind(), "token_rejected") << e.what();
  }
  EXPECT_EQ(rank0.get(), "token_rejected");
}

TEST(TokenStore, MissingKeyTimesOutNamed) {
  uint16_t port = testing::free_port();
  auto rank1 = std::async(std::launch::async, [&] {
    TokenStore s(opts(1, port, kTok, 500));
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
  });
  TokenStore s(opts(0, port, kTok, 500));
  try {
    s.wait({"never"}, std::chrono::milliseconds(300));
    FAIL() << "wait returned for a key nobody set";
  } catch (const PeerError& e) {
    EXPECT_EQ(e.kind(), "peer_timeout");
    EXPECT_NE(std::string(e.what()).find("never"), std::string::npos);
  }
  rank1.wait();
}

// Session members (they know the token) whose store frames are bad: each is dropped and closed by
// name of the problem, and rank 0 keeps serving the good client.
TEST(TokenStore, AClientSendingBadFramesIsDroppedAndTheOthersAreServed) {
  uint16_t port = testing::free_port();
  auto rank0 = std::async(std::launch::async, [&] {
    auto o = opts(0, port, kTok);
    o.world_size = 4;
    TokenStore s(o);
    s.set("from0", {'h', 'i'});
    auto v = s.get("good");
    return std::string(v.begin(), v.end());
  });
  auto rogue = [&](uint32_t rank, const std::string& bytes) {
    Fd fd = connect_peer("127.0.0.1", port, "127.0.0.1", "", kTok, HelloInfo{rank, 4, 42}, 10000,
                         nullptr);
    send_all(fd.get(), bytes.data(), bytes.size(), 2000, "sending a bad store frame");
    return fd;
  };
  // A header announcing 64 MiB, refused before the payload; a frame with an unknown op.
  Fd oversized = rogue(2, std::string("\x04\x00\x00\x00\x02", 5));
  Fd unknown_op = rogue(3, wire::encode_frame({wire::FrameType::kRequest, R"({"op":"delete","key_hex":"6b"})"}));
  auto o1 = opts(1, port, kTok);
  o1.world_size = 4;
  TokenStore s(o1);  // the last peer: rank 0 starts serving
  for (Fd* fd : {&oversized, &unknown_op}) {
    try {
      recv_frame(fd->get(), 4096, wire::deadline_in_ms(5000), "waiting for the answer to a bad frame");
      ADD_FAILURE() << "rank 0 answered a bad frame";
    } catch (const PeerError& e) {
      EXPECT_EQ(e.kind(), "peer_closed") << e.what();
    }
  }
  auto v = s.get("from0");
  EXPECT_EQ(std::string(v.begin(), v.end()), "hi");
  std::vector<char> big(TokenStore::kMaxValueBytes, '\xfe');  // the largest value crosses whole
  s.set("big", big);
  s.set("good", {'o', 'k'});
  EXPECT_EQ(rank0.get(), "ok");
}

TEST(TokenStore, OversizedValueIsRefusedBeforeSending) {
  uint16_t port = testing::free_port();
  auto rank0 = std::async(std::launch::async, [&] { TokenStore s(opts(0, port, kTok, 3000)); });
  TokenStore s(opts(1, port, kTok, 3000));
  try {
    s.set("k", std::vector<char>(TokenStore::kMaxValueBytes + 1, 'x'));
    FAIL() << "sent a value over the cap";
  } catch (const PeerError& e) {
    EXPECT_EQ(e.kind(), "io_error");
    EXPECT_NE(std::string(e.what()).find("exceeds the frame cap"), std::string::npos) << e.what();
  }
  rank0.wait();
}

}  // namespace
}  // namespace fabkit::fabric
