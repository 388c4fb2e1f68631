// The DCB netlink and ethtool byte formats: requests as the kernel parses them, replies the
// replay builds parsed back, a kernel error, and replies that lie about their lengths.
#include <gtest/gtest.h>
#include <linux/dcbnl.h>
#include <linux/ethtool.h>
#include <linux/netlink.h>

#include <cerrno>
#include <cstring>

#include "common/errors.h"
#include "probes/roce_qos/dcb_netlink.h"
#include "probes/roce_qos/ethtool_stats.h"
#include "probes/roce_qos/qos_kernel.h"

namespace fabkit::probes {
namespace {

DcbState sample() {
  DcbState s;
  s.status = "ok";
  s.dcbx = DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE;
  s.pfc_source = "ieee";
  s.pfc_enabled = 0x08;
  s.pfc_cap = 8;
  s.pfc_delay = 0;
  s.pfc_requests = {0, 0, 0, 1290418, 0, 0, 0, 0};
  s.pfc_indications = {0, 0, 0, 41927, 0, 0, 0, 0};
  s.prio_tc = {1, 0, 2, 3, 4, 5, 6, 7};
  s.tc_tx_bw = {10, 10, 10, 10, 10, 10, 0, 40};
  s.tc_tsa = {2, 2, 2, 2, 2, 2, 0, 2};
  s.apps = {{IEEE_8021QAZ_APP_SEL_DSCP, 26, 3}, {IEEE_8021QAZ_APP_SEL_DSCP, 0, 0}};
  return s;
}

TEST(DcbNetlink, RequestCarriesCommandAndIfname) {
  auto req = build_dcb_request(DCB_CMD_IEEE_GET, "ens1f0np0", 77);
  nlmsghdr h;
  std::memcpy(&h, req.data(), sizeof h);
  EXPECT_EQ(h.nlmsg_len, req.size());
  EXPECT_EQ(h.nlmsg_flags, NLM_F_REQUEST);
  uint8_t cmd = 0;
  std::string ifname;
  uint32_t seq = 0;
  ASSERT_TRUE(parse_dcb_request(req, cmd, ifname, seq));
  EXPECT_EQ(cmd, DCB_CMD_IEEE_GET);
  EXPECT_EQ(ifname, "ens1f0np0");
  EXPECT_EQ(seq, 77u);
}

// Found by fuzz_dcb_netlink: a length below the netlink + dcbmsg headers made the attribute span
// wrap around, and the walk read past the buffer (here it would find the name after the short
// length and accept the request).
TEST(DcbNetlink, RequestWhoseLengthIsShorterThanItsHeadersIsRefused) {
  auto req = build_dcb_request(DCB_CMD_IEEE_GET, "ens1f0np0", 77);
  const uint32_t short_len = NLMSG_HDRLEN;  // the dcbmsg header does not fit
  std::memcpy(req.data(), &short_len, sizeof short_len);
  uint8_t cmd = 0;
  std::string ifname;
  uint32_t seq = 0;
  EXPECT_FALSE(parse_dcb_request(req, cmd, ifname, seq));
  EXPECT_EQ(ifname, "");
}

TEST(DcbNetlink, IeeeReplyRoundTrips) {
  DcbState in = sample();
  auto reply = build_dcb_reply(DCB_CMD_IEEE_GET, "ens1f0np0", 5, in);
  DcbState out;
  auto st = parse_dcb_reply(reply, DCB_CMD_IEEE_GET, 5, out);
  ASSERT_TRUE(st.malformed.empty()) << st.malformed;
  EXPECT_EQ(st.kernel_errno, 0);
  EXPECT_EQ(out.pfc_source, "ieee");
  EXPECT_EQ(out.pfc_enabled, 0x08);
  EXPECT_EQ(out.dcbx, in.dcbx);
  EXPECT_EQ(out.pfc_requests, in.pfc_requests);
  EXPECT_EQ(out.pfc_indications, in.pfc_indications);
  EXPECT_EQ(out.prio_tc, in.prio_tc);
  EXPECT_EQ(out.tc_tx_bw, in.tc_tx_bw);
  ASSERT_EQ(out.apps.size(), 2u);
  EXPECT_EQ(out.apps[0].protocol, 26);
  EXPECT_EQ(out.apps[0].priority, 3);
}

TEST(DcbNetlink, CeePfcReply) {
  DcbState in = sample();
  in.pfc_source = "cee";
  in.pfc_enabled = 0x09;
  DcbState out;
  auto st =
      parse_dcb_reply(build_dcb_reply(DCB_CMD_PFC_GCFG, "eth0", 9, in), DCB_CMD_PFC_GCFG, 9, out);
  ASSERT_TRUE(st.malformed.empty()) << st.malformed;
  EXPECT_EQ(out.pfc_source, "cee");
  EXPECT_EQ(out.pfc_enabled, 0x09);
}

TEST(DcbNetlink, KernelErrorIsReturnedAsErrno) {
  DcbState out;
  auto st = parse_dcb_reply(build_netlink_error(EOPNOTSUPP, 3), DCB_CMD_IEEE_GET, 3, out);
  EXPECT_EQ(st.kernel_errno, EOPNOTSUPP);
  EXPECT_TRUE(st.malformed.empty());
}

TEST(DcbNetlink, OverrunningLengthsAreMalformedNotRead) {
  auto reply = build_dcb_reply(DCB_CMD_IEEE_GET, "eth0", 4, sample());
  {
    auto bad = reply;
    uint32_t len = static_cast<uint32_t>(bad.size() + 64);  // the header claims more than came
    std::memcpy(bad.data(), &len, sizeof len);
    DcbState out;
    EXPECT_FALSE(parse_dcb_reply(bad, DCB_CMD_IEEE_GET, 4, out).malformed.empty());
  }
  {
    // The first attribute (DCB_ATTR_IFNAME) claims 4000 bytes.
    auto bad = reply;
    const size_t at = NLMSG_HDRLEN + NLMSG_ALIGN(4);
    uint16_t len = 4000;
    std::memcpy(bad.data() + at, &len, sizeof len);
    DcbState out;
    EXPECT_FALSE(parse_dcb_reply(bad, DCB_CMD_IEEE_GET, 4, out).malformed.empty());
  }
  {
    DcbState out;  // a reply to another request
    EXPECT_FALSE(parse_dcb_reply(reply, DCB_CMD_IEEE_GET, 5, out).malformed.empty());
  }
  {
    DcbState out;  // cut inside the header
    std::vector<uint8_t> cut(reply.begin(), reply.begin() + 10);
    EXPECT_FALSE(parse_dcb_reply(cut, DCB_CMD_IEEE_GET, 4, out).malformed.empty());
  }
}

TEST(EthtoolStats, GstringsSlotsAreNulPadded) {
  std::vector<uint8_t> buf(2 * ETH_GSTRING_LEN, 0);
  std::memcpy(buf.data(), "rx_prio3_pause", 14);
  std::memset(buf.data() + ETH_GSTRING_LEN, 'x', ETH_GSTRING_LEN);  // no NUL: all 32 bytes
  auto names = parse_gstrings(buf.data(), 2);
  EXPECT_EQ(names[0], "rx_prio3_pause");
  EXPECT_EQ(names[1], std::string(ETH_GSTRING_LEN, 'x'));
}

TEST(EthtoolStats, ReplayedIoctlsReadBothReads) {
  Json fx = {{"interval_ms", 500},
             {"netdevs",
              {{"eth9",
                {{"dcb", "not_supported"},
                 {"ethtool", Json::array({{{"rx_discards_phy", 1}, {"rx_bytes", 10}},
                                          {{"rx_discards_phy", 4}, {"rx_bytes", 20}}})}}}}}};
  auto k = make_replay_qos_kernel(fx, "test");
  auto first = read_ethtool_stats(*k, "eth9");
  ASSERT_EQ(first.err, 0);
  ASSERT_EQ(first.names.size(), 2u);
  auto second = read_ethtool_stats(*k, "eth9");
  for (size_t i = 0; i < second.names.size(); ++i) {
    if (second.names[i] == "rx_discards_phy") {
      EXPECT_EQ(second.values[i], 4u);
    }
  }
  EXPECT_EQ(read_ethtool_stats(*k, "eth7").err, ENODEV);
  EXPECT_EQ(k->recorded_interval_ms(), 500);
}

TEST(QosReplay, BadFixturesNameTheField) {
  auto expect_usage = [](const Json& fx, const std::string& needle) {
    try {
      make_replay_qos_kernel(fx, "--qos-replay f.json");
      ADD_FAILURE() << "accepted " << fx.dump();
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_usage(Json::object(), "top level");
  expect_usage({{"netdevs", {{"e", {{"dcb", "maybe"}}}}}}, "netdevs.e.dcb");
  expect_usage({{"netdevs", {{"e", {{"dcb", {{"pfc", {{"enabled", {1, 0}}}}}}}}}}}, "8 flags");
  expect_usage({{"netdevs", {{"e", {{"ethtool", Json::array({{{"x", -1}}})}}}}}},
               "netdevs.e.ethtool[0].x");
  expect_usage({{"netdevs", {{"e", {{"ethtool", Json::array({{{"x", 1}}, {{"x", 2}}})}}}}}},
               "interval_ms");
  expect_usage({{"netdevs", {{"e", {{"dcb", {{"dscp2prio", {{"9", {1}}}}}}}}}}}, "dscp2prio");
}

}  // namespace
}  // namespace fabkit::probes
