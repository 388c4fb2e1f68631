// The MAD decoders on bytes laid out by hand from the IBA tables with the values of the real
// captures (tests/fixtures/ib_qos/README.md), independently of the encoders the replay uses; and
// every way a reply can be wrong.
#include <gtest/gtest.h>

#include "probes/ib_qos/mad_codec.h"

namespace fabkit::probes {
namespace {

TEST(MadCodec, PortInfoOfTheConnectX2Capture) {
  // smpquery PI 1 1: LID 1, SMLid 1, VLCap VL0-3, OperVLs VL0-3 (IBA table 146: LID at byte 16,
  // MasterSMLID at 18, PortState in byte 32's low nibble, MasterSMSL in byte 36's low nibble,
  // VLCap in byte 37's high nibble, OperationalVLs in byte 43's high nibble).
  std::array<uint8_t, 64> d{};
  d[17] = 1;
  d[19] = 1;
  d[32] = 0x54;  // LinkSpeedSupported 5 | PortState 4 (Active)
  d[36] = 0x50;  // NeighborMTU 5 (4096) | MasterSMSL 0
  d[37] = 0x31;  // VLCap 3 (VL0-3) | InitType 1
  d[43] = 0x3f;  // OperationalVLs 3 | the four partition/filter bits set
  PortInfoQos p = decode_port_info(d);
  EXPECT_EQ(p.lid, 1);
  EXPECT_EQ(p.sm_lid, 1);
  EXPECT_EQ(p.port_state, 4);
  EXPECT_EQ(p.sm_sl, 0);
  EXPECT_EQ(vls_text(p.vl_cap), "VL0-3");
  EXPECT_EQ(vls_text(p.oper_vls), "VL0-3");
  EXPECT_EQ(data_vl_count(p.oper_vls), 4);
}

TEST(MadCodec, Sl2VlRowOfTheConnectX2Capture) {
  // | 0| 1| 2| 3| 0| 1| 2| 3|...: SL0 in byte 0's high nibble, SL1 in its low nibble.
  std::array<uint8_t, 64> d{};
  for (int i = 0; i < 8; ++i) d[i] = i % 2 ? 0x23 : 0x01;
  auto t = decode_sl2vl(d);
  std::array<int, 16> want = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
  EXPECT_EQ(t, want);
  d[1] = 0x2f;  // SL3 -> VL15
  EXPECT_EQ(decode_sl2vl(d)[3], 15);
}

TEST(MadCodec, PathRecordFields) {
  std::vector<uint8_t> d(64, 0);
  d[8] = 0xfe;
  d[9] = 0x80;
  d[23] = 0x01;
  d[40] = 0x00;
  d[41] = 0x0c;  // DLID 12
  d[52] = 0x00;
  d[53] = 0x12;  // QoSClass 1 | SL 2
  d[54] = 0x85;  // MTU selector 2 | 4096
  auto p = decode_path_record(d);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->dgid, "fe80::1");
  EXPECT_EQ(p->dlid, 12);
  EXPECT_EQ(p->sl, 2);
  EXPECT_EQ(p->qos_class, 1);
  EXPECT_EQ(p->mtu, 5);
  EXPECT_FALSE(decode_path_record(std::vector<uint8_t>(63, 0)));
}

TEST(MadCodec, RequestsRoundTripThroughTheReplaySide) {
  auto smp = build_smp_get(kAttrSlToVlTable, 0, 77);
  ASSERT_EQ(smp.size(), kMadSize);
  EXPECT_EQ(smp[1], kMgmtClassSmpDirected);
  MadRequest req;
  ASSERT_TRUE(parse_mad_request(smp, req));
  EXPECT_EQ(req.attr_id, kAttrSlToVlTable);
  std::array<int, 16> t = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7};
  MadReply r = parse_mad_reply(build_smp_reply(req, encode_sl2vl(t), 0), kMgmtClassSmpDirected,
                               kAttrSlToVlTable, 77);
  EXPECT_EQ(r.malformed, "");
  EXPECT_EQ(r.status, 0);  // the D bit of a directed-route reply is not a status
  EXPECT_EQ(decode_sl2vl(r.smp_data), t);

  auto sa = build_path_record_get("fe80:0000:0000:0000:b859:9f03:00d6:5b3e",
                                  "fe80::b859:9f03:d6:5b3e", 78);
  ASSERT_EQ(sa.size(), kMadSize);
  ASSERT_TRUE(parse_mad_request(sa, req));
  EXPECT_EQ(req.sgid, "fe80::b859:9f03:d6:5b3e");
  EXPECT_EQ(req.dgid, "fe80::b859:9f03:d6:5b3e");
  EXPECT_TRUE(build_path_record_get("not-a-gid", "fe80::1", 1).empty());
}

TEST(MadCodec, MalformedRepliesAreNamed) {
  MadRequest req;
  ASSERT_TRUE(parse_mad_request(build_smp_get(kAttrPortInfo, 1, 5), req));
  auto good = build_smp_reply(req, {}, 0);
  EXPECT_NE(
      parse_mad_reply({1, 2, 3}, kMgmtClassSmpDirected, kAttrPortInfo, 5).malformed.find("3 bytes"),
      std::string::npos);
  EXPECT_NE(parse_mad_reply(good, kMgmtClassSubnAdm, kAttrPortInfo, 5).malformed.find("class"),
            std::string::npos);
  EXPECT_NE(
      parse_mad_reply(good, kMgmtClassSmpDirected, kAttrSlToVlTable, 5).malformed.find("attribute"),
      std::string::npos);
  EXPECT_NE(
      parse_mad_reply(good, kMgmtClassSmpDirected, kAttrPortInfo, 6).malformed.find("transaction"),
      std::string::npos);
  auto request_echo = build_smp_get(kAttrPortInfo, 1, 5);  // a Get, not a GetResp
  EXPECT_NE(parse_mad_reply(request_echo, kMgmtClassSmpDirected, kAttrPortInfo, 5)
                .malformed.find("method"),
            std::string::npos);
  EXPECT_EQ(parse_mad_reply(build_smp_reply(req, {}, 0x1c), kMgmtClassSmpDirected, kAttrPortInfo, 5)
                .status,
            0x1c);
}

TEST(MadCodec, VlEncodings) {
  EXPECT_EQ(vls_text(0), "none");
  EXPECT_EQ(vls_text(1), "VL0");
  EXPECT_EQ(vls_text(4), "VL0-7");
  EXPECT_EQ(vls_text(5), "VL0-14");
  EXPECT_EQ(vls_text(9), "reserved (9)");
  EXPECT_EQ(data_vl_count(9), 0);
}

}  // namespace
}  // namespace fabkit::probes
