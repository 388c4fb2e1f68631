// The N-host pair pieces that need no network: the ring orders the group test runs (every pair of
// a group adjacent in one ring) and the agent's checks on a ring all-reduce request.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>

#include "fabric/agent/agent_requests.h"
#include "fabric/pair/group_controller.h"
#include "fabric/wire/wire_error.h"

namespace fabkit {
namespace {

TEST(RingOrders, EveryPairIsAdjacentInFloorHalfNRings) {
  for (int n = 2; n <= 33; ++n) {
    auto orders = pair::ring_orders_covering_all_pairs(n);
    EXPECT_EQ(static_cast<int>(orders.size()), n / 2) << "n=" << n;
    std::set<std::pair<int, int>> seen;
    for (const auto& o : orders) {
      std::vector<int> sorted = o;
      std::sort(sorted.begin(), sorted.end());
      for (int i = 0; i < n; ++i)
        ASSERT_EQ(sorted[static_cast<size_t>(i)], i) << "n=" << n << ": not a permutation";
      for (size_t r = 0; r < o.size(); ++r) {
        int a = o[r], b = o[(r + 1) % o.size()];
        seen.insert({std::min(a, b), std::max(a, b)});
      }
    }
    EXPECT_EQ(static_cast<int>(seen.size()), n * (n - 1) / 2)
        << "n=" << n << ": a pair is never adjacent";
  }
}

Json ring_request(int rank, int world) {
  Json ring = Json::array();
  for (int i = 0; i < world; ++i) ring.push_back("10.0.0." + std::to_string(i + 1));
  return {{"rank", rank},
          {"world_size", world},
          {"ring_addrs", ring},
          {"local_addr", ring[static_cast<size_t>(rank)]},
          {"peer_addr", ring[static_cast<size_t>((rank + 1) % world)]},
          {"port", 5000},
          {"sizes_bytes", {4096u}}};
}

void expect_bad(const Json& args, const std::string& field) {
  try {
    agent::parse_transport_args(args);
    ADD_FAILURE() << "accepted " << args.dump();
  } catch (const wire::WireError& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

TEST(RingRequest, AgentAcceptsAConsistentRingAndRefusesTheRest) {
  auto t = agent::parse_transport_args(ring_request(3, 4));
  EXPECT_EQ(t.world_size, 4);
  EXPECT_EQ(t.ring_addrs.size(), 4u);
  EXPECT_EQ(t.peer_addr, "10.0.0.1");  // rank 3's right neighbour is rank 0
  expect_bad(ring_request(4, 4), "'rank'");
  Json short_ring = ring_request(1, 4);
  short_ring["ring_addrs"].erase(3);
  expect_bad(short_ring, "ring_addrs");
  // peer_addr is what the agent's target check sees: it must be the ring's right neighbour.
  Json other_peer = ring_request(1, 4);
  other_peer["peer_addr"] = "10.0.0.4";
  expect_bad(other_peer, "peer_addr");
  Json too_big = ring_request(0, 3);
  too_big["world_size"] = 257;
  expect_bad(too_big, "world_size");
  // A 2-rank request is the 2-host contract as before: no ring needed, rank 0..1.
  Json two = {{"rank", 1},
              {"local_addr", "10.0.0.2"},
              {"peer_addr", "10.0.0.1"},
              {"port", 5000},
              {"sizes_bytes", {4096u}}};
  EXPECT_EQ(agent::parse_transport_args(two).world_size, 2);
  two["rank"] = 2;
  expect_bad(two, "'rank'");
}

TEST(RingRequest, RingOrdersMustBePermutationsOfTheRanksAndNeedTheRing) {
  Json ok = ring_request(1, 4);
  ok["ring_orders"] = pair::ring_orders_covering_all_pairs(4);
  auto t = agent::parse_transport_args(ok);
  ASSERT_EQ(t.ring_orders.size(), 2u);
  EXPECT_EQ(t.ring_orders[1], pair::ring_orders_covering_all_pairs(4)[1]);
  // The default whole-run bound grows with the orders: one sweep each.
  EXPECT_GT(t.sweep_timeout_ms, agent::parse_transport_args(ring_request(1, 4)).sweep_timeout_ms);
  for (Json bad : {Json::array(), Json{{0, 1, 2}}, Json{{0, 1, 2, 2}}, Json{{0, 1, 2, 4}},
                   Json{{0, 1, 2, -3}}, Json{{0, 1, "2", 3}}, Json("0123")}) {
    Json a = ring_request(1, 4);
    a["ring_orders"] = bad;
    expect_bad(a, "ring_orders");
  }
  Json many = ring_request(0, 2);
  many["ring_orders"] = Json::array();
  for (int i = 0; i < 129; ++i) many["ring_orders"].push_back({0, 1});
  expect_bad(many, "ring_orders");
  // A 2-rank session names both addresses too: the mesh connects by ring_addrs.
  Json two = {{"rank", 1},    {"local_addr", "10.0.0.2"}, {"peer_addr", "10.0.0.1"},
              {"port", 5000}, {"sizes_bytes", {4096u}},   {"ring_orders", {{0, 1}}}};
  expect_bad(two, "ring_addrs");
  two["ring_addrs"] = {"10.0.0.1", "10.0.0.2"};
  EXPECT_EQ(agent::parse_transport_args(two).ring_orders.size(), 1u);
}

}  // namespace
}  // namespace fabkit
