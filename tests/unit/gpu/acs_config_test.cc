// Synthetic config-space blobs laid out per the PCIe base spec: extended capability headers at
// 0x100 (id 15:0, version 19:16, next 31:20), ACS capability id 0x000D with the Capability
// register at +4 and the Control register at +6.
#include <gtest/gtest.h>

#include "probes/gpudirect/acs_config.h"

namespace fabkit::probes {

std::string config_blob(std::vector<std::pair<size_t, uint32_t>> dwords) {
  std::string b(4096, '\0');
  for (auto [off, v] : dwords)
    for (int i = 0; i < 4; ++i) b[off + i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return b;
}

uint32_t ext_header(uint16_t id, uint8_t version, uint16_t next) {
  return static_cast<uint32_t>(id) | static_cast<uint32_t>(version) << 16 |
         static_cast<uint32_t>(next) << 20;
}

namespace {

TEST(AcsConfig, ShortReadIsUnknownWithTheReason) {
  AcsReading r = parse_acs_from_config(std::string(64, '\xff'));
  EXPECT_EQ(r.state, AcsState::kUnknown);
  EXPECT_NE(r.reason.find("64 bytes"), std::string::npos);
  EXPECT_NE(r.reason.find("root"), std::string::npos);
  EXPECT_EQ(parse_acs_from_config(std::string(256, '\0')).state, AcsState::kUnknown);
}

TEST(AcsConfig, RedirectBitsOnASwitchPort) {
  // AER at 0x100 -> ACS at 0x148 -> end. ACSCap 0x007f, ACSCtl 0x001d (SV RR CR UF).
  std::string b = config_blob({{0x100, ext_header(0x0001, 2, 0x148)},
                               {0x148, ext_header(kPcieExtCapAcs, 1, 0)},
                               {0x14c, 0x001d007fu}});
  AcsReading r = parse_acs_from_config(b);
  EXPECT_EQ(r.state, AcsState::kRedirecting);
  EXPECT_EQ(r.offset, 0x148u);
  EXPECT_EQ(r.capability, 0x007f);
  EXPECT_EQ(r.control, 0x001d);
  EXPECT_STREQ(to_string(r.state), "redirecting");
}

TEST(AcsConfig, OnlySourceValidationIsNotRedirecting) {
  std::string b = config_blob({{0x100, ext_header(kPcieExtCapAcs, 1, 0)}, {0x104, 0x0001007fu}});
  AcsReading r = parse_acs_from_config(b);
  EXPECT_EQ(r.state, AcsState::kDisabled);
  EXPECT_EQ(r.control, kAcsSourceValidation);
}

TEST(AcsConfig, NoAcsCapabilityOrNoExtendedSpace) {
  EXPECT_EQ(parse_acs_from_config(config_blob({{0x100, ext_header(0x0001, 2, 0)}})).state,
            AcsState::kNotPresent);
  EXPECT_EQ(parse_acs_from_config(config_blob({})).state, AcsState::kNotPresent);
  EXPECT_EQ(parse_acs_from_config(std::string(4096, '\xff')).state, AcsState::kNotPresent);
}

TEST(AcsConfig, LoopingOrOutOfRangeListsTerminate) {
  // 0x100 points to itself: bounded walk, no hang.
  EXPECT_EQ(parse_acs_from_config(config_blob({{0x100, ext_header(0x0001, 1, 0x100)}})).state,
            AcsState::kNotPresent);
  // next pointer below 0x100 and at the very end of the space.
  EXPECT_EQ(parse_acs_from_config(config_blob({{0x100, ext_header(0x0001, 1, 0x040)}})).state,
            AcsState::kNotPresent);
  EXPECT_EQ(parse_acs_from_config(config_blob({{0x100, ext_header(0x0001, 1, 0xffc)},
                                               {0xffc, ext_header(kPcieExtCapAcs, 1, 0)}}))
                .state,
            AcsState::kNotPresent);  // the control register would lie past 4 KiB
}

}  // namespace
}  // namespace fabkit::probes
