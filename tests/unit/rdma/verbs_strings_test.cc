#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "verbs/verbs_strings.h"

namespace fabkit::verbs {
namespace {

// Every code in a generous range gives a non-empty string; known codes have distinct names and
// unknown ones say so with their number.
template <typename E>
void expect_total(int lo, int hi, const std::set<int>& known) {
  std::set<std::string> names;
  for (int c = lo; c <= hi; ++c) {
    std::string s = to_string(static_cast<E>(c));
    ASSERT_FALSE(s.empty()) << c;
    if (known.count(c)) {
      EXPECT_EQ(s.find("unknown"), std::string::npos) << c;
      names.insert(s);
    } else {
      EXPECT_EQ(s, "unknown (" + std::to_string(c) + ")");
    }
  }
  EXPECT_EQ(names.size(), known.size());
}

TEST(VerbsStrings, EveryEnumIsTotal) {
  expect_total<PortState>(-3, 300, {0, 1, 2, 3, 4, 5});
  expect_total<PhysState>(-3, 300, {1, 2, 3, 4, 5, 6, 7});
  expect_total<Mtu>(-3, 300, {1, 2, 3, 4, 5});
  expect_total<Speed>(-3, 600, {1, 2, 4, 8, 16, 32, 64, 128, 256});
  expect_total<Width>(-3, 300, {1, 2, 4, 8, 16});
  expect_total<GidType>(-3, 300, {0, 1, 2});
  // Unspecified and InfiniBand share a name (rdma-core's convention), so check it separately.
  EXPECT_EQ(to_string(LinkLayer::kUnspecified), "InfiniBand");
  EXPECT_EQ(to_string(LinkLayer::kEthernet), "Ethernet");
  EXPECT_EQ(to_string(static_cast<LinkLayer>(9)), "unknown (9)");
}

TEST(VerbsStrings, NamesMatchSysfsAndDescribeAddsTheCode) {
  EXPECT_EQ(to_string(PortState::kActive), "ACTIVE");
  EXPECT_EQ(describe(PortState::kActive), "ACTIVE (4)");
  EXPECT_EQ(describe(PhysState::kLinkUp), "LinkUp (5)");
  EXPECT_EQ(describe(PhysState::kPolling), "Polling (2)");
  EXPECT_EQ(describe(PhysState::kDisabled), "Disabled (3)");
  EXPECT_EQ(to_string(PhysState::kPhyTest), "Phy Test");
  EXPECT_EQ(describe(Mtu::k4096), "4096 (5)");
  EXPECT_EQ(describe(Speed::kHdr), "HDR (64)");
  EXPECT_EQ(describe(Width::k4x), "4X (2)");
  EXPECT_EQ(describe(static_cast<Speed>(3)), "unknown (3)");
  for (int c = 0; c <= 5; ++c)
    EXPECT_EQ(port_state_from_name(to_string(static_cast<PortState>(c))), static_cast<PortState>(c));
  for (int c = 1; c <= 7; ++c)
    EXPECT_EQ(phys_state_from_name(to_string(static_cast<PhysState>(c))), static_cast<PhysState>(c));
  EXPECT_EQ(gid_type_from_name("RoCE v2"), GidType::kRoceV2);
  EXPECT_FALSE(gid_type_from_name("IB/RoCE v1"));  // sysfs's shared spelling needs the link layer
  EXPECT_FALSE(port_state_from_name("PORT_ACTIVE"));
}

TEST(VerbsStrings, RatesAsTheKernelReportsThem) {
  EXPECT_EQ(rate_string(Speed::kEdr, Width::k4x), "100 Gb/sec (4X EDR)");
  EXPECT_EQ(rate_string(Speed::kHdr, Width::k4x), "200 Gb/sec (4X HDR)");
  EXPECT_EQ(rate_string(Speed::kNdr, Width::k4x), "400 Gb/sec (4X NDR)");
  EXPECT_EQ(rate_string(Speed::kXdr, Width::k4x), "800 Gb/sec (4X XDR)");
  EXPECT_EQ(rate_string(Speed::kFdr, Width::k4x), "56 Gb/sec (4X FDR)");
  EXPECT_EQ(rate_string(Speed::kFdr10, Width::k4x), "40 Gb/sec (4X FDR10)");
  EXPECT_EQ(rate_string(Speed::kSdr, Width::k1x), "2.5 Gb/sec (1X SDR)");
  EXPECT_EQ(rate_string(Speed::kQdr, Width::k12x), "120 Gb/sec (12X QDR)");
  EXPECT_EQ(rate_string(Speed::kHdr, Width::k2x), "100 Gb/sec (2X HDR)");
  EXPECT_EQ(rate_string(Speed::kDdr, Width::k8x), "40 Gb/sec (8X DDR)");
  EXPECT_DOUBLE_EQ(rate_gbps(Speed::kEdr, Width::k1x), 25.0);
  EXPECT_EQ(rate_gbps(static_cast<Speed>(3), Width::k4x), 0.0);
  EXPECT_EQ(rate_string(Speed::kEdr, static_cast<Width>(3)),
            "unknown rate (speed EDR (32), width unknown (3))");
  EXPECT_DOUBLE_EQ(lane_signal_gbps(Speed::kEdr), 25.78125);
  EXPECT_DOUBLE_EQ(lane_signal_gbps(Speed::kFdr10), 10.3125);
  EXPECT_DOUBLE_EQ(lane_signal_gbps(Speed::kFdr), 14.0625);
  EXPECT_DOUBLE_EQ(lane_signal_gbps(Speed::kHdr), 53.125);
  EXPECT_DOUBLE_EQ(lane_signal_gbps(Speed::kNdr), 106.25);
  EXPECT_DOUBLE_EQ(lane_signal_gbps(Speed::kXdr), 212.5);
}

TEST(VerbsStrings, MtuConversions) {
  EXPECT_EQ(mtu_bytes(Mtu::k256), 256);
  EXPECT_EQ(mtu_bytes(Mtu::k4096), 4096);
  EXPECT_EQ(mtu_bytes(static_cast<Mtu>(6)), 0);
  EXPECT_EQ(mtu_from_bytes(1024), Mtu::k1024);
  EXPECT_FALSE(mtu_from_bytes(1500));
}

TEST(VerbsTypes, GidParsingAndFormatting) {
  auto g = parse_gid("::ffff:198.18.1.5");
  ASSERT_TRUE(g);
  EXPECT_EQ(format_gid(*g), "0000:0000:0000:0000:0000:ffff:c612:0105");
  EXPECT_TRUE(is_ipv4_mapped(*g));
  EXPECT_EQ(ipv4_of(*g), "198.18.1.5");
  auto ib = parse_gid("fe80:0000:0000:0000:b859:9f03:00d6:5b3e");
  ASSERT_TRUE(ib);
  EXPECT_FALSE(is_ipv4_mapped(*ib));
  EXPECT_EQ(ipv4_of(*ib), "");
  EXPECT_TRUE(is_zero(*parse_gid("0000:0000:0000:0000:0000:0000:0000:0000")));
  EXPECT_FALSE(parse_gid("fe80:zz::1"));
  uint64_t be = 0;
  const uint8_t bytes[8] = {0xb8, 0x59, 0x9f, 0x03, 0x00, 0xd6, 0x5b, 0x3e};
  std::memcpy(&be, bytes, 8);
  EXPECT_EQ(format_guid(be), "b859:9f03:00d6:5b3e");
}

TEST(VerbsTypes, PreferredRoceV2GidIsIpv4MappedThenAnyV2) {
  auto e = [](int i, const char* gid, GidType t) { return GidEntry{i, *parse_gid(gid), t, "eth0"}; };
  std::vector<GidEntry> gids = {e(0, "fe80::1", GidType::kRoceV1), e(1, "fe80::1", GidType::kRoceV2),
                                e(2, "::ffff:10.0.0.1", GidType::kRoceV1),
                                e(3, "::ffff:10.0.0.1", GidType::kRoceV2)};
  EXPECT_EQ(preferred_roce_v2_gid(gids), 3);
  gids.pop_back();
  EXPECT_EQ(preferred_roce_v2_gid(gids), 1);
  gids.erase(gids.begin() + 1);
  EXPECT_FALSE(preferred_roce_v2_gid(gids));
  EXPECT_FALSE(preferred_roce_v2_gid({e(5, "::", GidType::kRoceV2)}));  // empty slot
}

}  // namespace
}  // namespace fabkit::verbs
