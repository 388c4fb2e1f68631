// The token-authenticated rendezvous store Gloo runs on (no shared filesystem needed).
#include <gtest/gtest.h>

#include <future>

#include "fabric/allreduce/allreduce_types.h"
#include "fabric/allreduce/gloo_store.h"
#include "loopback_harness.h"

namespace fabkit::fabric {
namespace {

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
    TokenStore s(opts(0, port, "tok"));
    s.set("0", {'a', 'b'});
    auto v = s.get("1");  // set by rank 1 later
    return std::string(v.begin(), v.end());
  });
  std::string from0;
  {
    TokenStore s(opts(1, port, "tok"));
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
      TokenStore s(opts(0, port, "right", 1500));  // reports token_rejected at its deadline
      return std::string("accepted");
    } catch (const PeerError& e) {
      return e.kind();
    }
  });
  try {
    TokenStore s(opts(1, port, "wrong", 1500));
    FAIL() << "wrong token accepted";
  } catch (const PeerError& e) {
    EXPECT_EQ(e.kind(), "token_rejected") << e.what();
  }
  EXPECT_EQ(rank0.get(), "token_rejected");
}

TEST(TokenStore, MissingKeyTimesOutNamed) {
  uint16_t port = testing::free_port();
  auto rank1 = std::async(std::launch::async, [&] { TokenStore s(opts(1, port, "tok", 500)); std::this_thread::sleep_for(std::chrono::milliseconds(700)); });
  TokenStore s(opts(0, port, "tok", 500));
  try {
    s.wait({"never"}, std::chrono::milliseconds(300));
    FAIL() << "wait returned for a key nobody set";
  } catch (const PeerError& e) {
    EXPECT_EQ(e.kind(), "peer_timeout");
    EXPECT_NE(std::string(e.what()).find("never"), std::string::npos);
  }
  rank1.wait();
}

}  // namespace
}  // namespace fabkit::fabric
