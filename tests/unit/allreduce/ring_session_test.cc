// The ring session (run_fabkit_socket_ring_session): one runner per rank runs several ring orders
// over a mesh of connections made once, between threads on loopback addresses.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "fabric/allreduce/runners.h"
#include "loopback_harness.h"

namespace fabkit::fabric {
namespace {

using testing::free_port;
using testing::loopback_spec;

// Walecki's three orders of 6 ranks: every pair of ranks side by side in one of them.
const std::vector<std::vector<int>> kSixRankOrders = {
    {0, 1, 5, 2, 4, 3}, {1, 2, 0, 3, 5, 4}, {2, 3, 1, 4, 0, 5}};

std::vector<AllreduceSpec> session_specs(int n, std::vector<uint64_t> sizes) {
  uint16_t port = free_port();
  std::vector<AllreduceSpec> specs;
  std::vector<std::string> addrs;
  for (int r = 0; r < n; ++r) addrs.push_back("127.0.0." + std::to_string(r + 1));
  for (int r = 0; r < n; ++r) {
    auto s = loopback_spec(r, port, sizes);
    s.world_size = n;
    s.ring_addrs = addrs;
    s.local_addr = addrs[static_cast<size_t>(r)];
    s.peer_addr = addrs[static_cast<size_t>((r + 1) % n)];
    specs.push_back(s);
  }
  return specs;
}

std::vector<RingSessionRun> run_session(const std::vector<AllreduceSpec>& specs,
                                        const std::vector<std::vector<std::vector<int>>>& orders) {
  std::vector<RingSessionRun> runs(specs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < specs.size(); ++i)
    threads.emplace_back([&, i] { runs[i] = run_fabkit_socket_ring_session(specs[i], orders[i]); });
  for (auto& t : threads) t.join();
  return runs;
}

TEST(RingSession, EveryOrderOfSixRanksRunsCorrectlyOverOneMesh) {
  const std::vector<uint64_t> sizes = {4, 4 * 1001, (1 << 20) + 4 * 7};
  auto specs = session_specs(6, sizes);
  auto runs = run_session(specs, std::vector<std::vector<std::vector<int>>>(6, kSixRankOrders));
  for (size_t r = 0; r < runs.size(); ++r) {
    ASSERT_EQ(runs[r].session.status, "ok") << "rank " << r << ": " << runs[r].session.reason;
    ASSERT_EQ(runs[r].orders.size(), kSixRankOrders.size());
    for (const auto& o : runs[r].orders) {
      ASSERT_EQ(o.status, "ok") << o.reason;
      ASSERT_EQ(o.sizes.size(), sizes.size());
      for (const auto& s : o.sizes) {
        EXPECT_TRUE(s.correct) << "rank " << r << " size " << s.bytes;
        EXPECT_GT(s.best_time_us, 0);
      }
      EXPECT_EQ(o.extra.value("world_size", 0), 6);
    }
  }
  const Json j = to_json(runs[0]);
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["orders"].size(), 3u);
}

TEST(RingSession, TwoRanksRunOnTheirOneConnection) {
  auto runs = run_session(session_specs(2, {4, 1 << 16}), {{{0, 1}}, {{0, 1}}});
  for (const auto& r : runs) {
    ASSERT_EQ(r.session.status, "ok") << r.session.reason;
    ASSERT_EQ(r.orders.size(), 1u);
    for (const auto& s : r.orders[0].sizes) EXPECT_TRUE(s.correct);
  }
}

TEST(RingSession, AnOrderThatIsNotAPermutationIsNamedWithoutConnecting) {
  auto specs = session_specs(3, {4});
  auto t0 = std::chrono::steady_clock::now();
  RingSessionRun r = run_fabkit_socket_ring_session(specs[0], {{0, 1, 1}});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500));
  EXPECT_EQ(r.session.status, "failed");
  EXPECT_EQ(r.session.extra.value("error", ""), "invalid_spec");
  EXPECT_NE(r.session.reason.find("permutation"), std::string::npos) << r.session.reason;
  EXPECT_TRUE(r.orders.empty());
}

TEST(RingSession, RanksGivenDifferentOrdersAreAPlanMismatch) {
  auto specs = session_specs(3, {4});
  auto runs = run_session(specs, {{{0, 1, 2}}, {{0, 2, 1}}, {{0, 1, 2}}});
  int mismatches = 0;
  for (const auto& r : runs) {
    EXPECT_EQ(r.session.status, "failed");
    mismatches += r.session.extra.value("error", "") == "plan_mismatch";
  }
  EXPECT_GE(mismatches, 1);
}

TEST(RingSession, AMissingRankFailsTheOthersWithinTheirTimeout) {
  auto specs = session_specs(3, {4});
  for (auto& s : specs) s.timeout_ms = 800;
  specs.pop_back();  // rank 2 never starts
  auto t0 = std::chrono::steady_clock::now();
  auto runs = run_session(specs, {{{0, 1, 2}}, {{0, 1, 2}}});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  for (const auto& r : runs) {
    EXPECT_EQ(r.session.status, "failed");
    EXPECT_FALSE(r.session.reason.empty());
  }
}

}  // namespace
}  // namespace fabkit::fabric
