// The text forms of a kernel log the probe reads besides plain dmesg (kernel_log_test.cc has
// those): dmesg --decode --time-format iso, journalctl -k's short, short-precise, short-iso and
// short-monotonic, dmesg -T. Real captures where tests/fixtures/kernel_log/README.md names one;
// the lines built here say what they are built from.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "probes/kernel_log/kernel_log_facts.h"
#include "tests/support/ttar.h"
#include "tests/unit/kernel_log/kernel_log_test_support.h"

namespace fabkit::probes {
namespace {

using test_support::fixture_text;

KernelLogFacts scan(std::vector<KernelLogRecord> records, std::optional<int64_t> boot) {
  KernelLogFacts f;
  f.readable = true;
  f.boot_time_unix_s = boot;
  place_wall_times(records, boot);
  scan_kernel_log(records, {}, f);
  return f;
}

const LogEventGroup* event(const KernelLogFacts& f, const std::string& kind,
                           const std::string& dev) {
  for (const auto& e : f.events)
    if (e.kind == kind && e.device == dev) return &e;
  return nullptr;
}

// gpud's own test capture (components/memory/testdata/dmesg.decode.iso.log).
TEST(KernelLogFormats, DecodeIsoCaptureKeepsFacilityWallTimesAndEveryLine) {
  std::string format;
  auto rs = parse_kernel_log_text(fixture_text("gpud_dmesg_decode_iso.txt"), &format);
  EXPECT_EQ(format, "dmesg");
  ASSERT_EQ(rs.size(), 24u);
  for (const auto& r : rs) {
    EXPECT_EQ(r.facility, 0);  // "kern  :warn  : "
    EXPECT_TRUE(r.unix_s);
    EXPECT_FALSE(r.time_s);  // no since-boot time until the boot time is known
  }
  EXPECT_NEAR(*rs[0].unix_s, 1737434504.283302, 1e-6);
  EXPECT_EQ(rs[0].message.substr(0, 33), "NVRM: Xid (PCI:0000:38:00): 13, p");
  EXPECT_NEAR(*rs.back().unix_s, 1737449190.287197 + 60, 1e-6);
  EXPECT_EQ(rs.back().message, "oom-kill:constraint=OTHER_CONSTRAINT");

  // With the boot time 1000 s before the first record, times become seconds since boot.
  auto f = scan(rs, 1737434504 - 1000);
  ASSERT_EQ(f.xids.size(), 2u);
  EXPECT_EQ(f.xids[0].xid, 13);
  EXPECT_EQ(f.xids[0].count, 16);
  ASSERT_TRUE(f.xids[0].first_s);
  EXPECT_NEAR(*f.xids[0].first_s, 1000.283302, 1e-6);
  EXPECT_EQ(f.xids[1].xid, 43);
  EXPECT_EQ(f.untimed_records, 0u);
  // Without it they stay untimed, and count in any window.
  EXPECT_EQ(scan(rs, std::nullopt).untimed_records, 24u);
}

TEST(KernelLogFormats, DecodePrefixNoLongerHidesAerAndMlx5Lines) {
  // Real lines of nic_aer_link_lines.txt and mlx5_module_power.txt, with the head dmesg
  // --decode --time-format iso gives every record.
  std::string format;
  auto rs = parse_kernel_log_text(
      "kern  :err   : 2025-09-22T09:59:09,123456+00:00 pcieport 0000:80:1b.4: AER: PCIe Bus "
      "Error: severity=Uncorrectable (Non-Fatal), type=Transaction Layer, (Requester ID)\n"
      "kern  :warn  : 2024-12-01T14:54:40,000000+00:00 mlx5_core 0000:5c:00.0: "
      "mlx5_pcie_event:299:(pid 268269): Detected insufficient power on the PCIe slot (27W).\n"
      "kern  :err   : 2021-12-01T10:00:00,445220+00:00 mlx5_core 0000:61:00.0: "
      "wait_func_handle_exec_timeout:1104:(pid 141183): cmd[22]: CREATE_DCT(0x710) No done "
      "completion\n",
      &format);
  auto f = scan(rs, std::nullopt);
  EXPECT_TRUE(event(f, "aer_nonfatal", "0000:80:1b.4"));
  EXPECT_TRUE(event(f, "mlx5_slot_power", "0000:5c:00.0"));
  EXPECT_TRUE(event(f, "mlx5_cmd_timeout", "0000:61:00.0"));
}

TEST(KernelLogFormats, UserSpaceRecordsOfADecodeCaptureAreNeverJudged) {
  // What a local user writes to /dev/kmsg shows as "user  :" however it is worded.
  std::string format;
  auto rs = parse_kernel_log_text(
      "user  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: Xid (PCI:0000:38:00): 79, pid=1, "
      "name=x, GPU has fallen off the bus.\n"
      "user  :crit  : Kernel panic - not syncing: Fatal machine check\n"
      "user  :notice: [  123.456789] NVRM: knvlinkUpdatePostRxDetectLinkMask_IMPL: Failed to "
      "update Rx Detect Link mask!\n",
      &format);
  ASSERT_EQ(rs.size(), 3u);
  for (const auto& r : rs) EXPECT_EQ(r.facility, 1);
  auto f = scan(rs, std::nullopt);
  EXPECT_TRUE(f.xids.empty());
  EXPECT_TRUE(f.events.empty());
  EXPECT_EQ(f.user_space_records, 3u);
}

// fedora-coreos-tracker#549's journalctl -o short-monotonic capture.
TEST(KernelLogFormats, JournalShortMonotonicGivesTimesSinceBootAndTheKernelsTag) {
  std::string format;
  auto rs = parse_kernel_log_text(fixture_text("journal_short_monotonic.txt"), &format);
  ASSERT_EQ(rs.size(), 4u);
  EXPECT_EQ(rs[2].message, "dca service started, version 1.12.1");
  EXPECT_EQ(rs[2].facility, 0);
  ASSERT_TRUE(rs[2].time_s);
  EXPECT_DOUBLE_EQ(*rs[2].time_s, 12.021652);
  EXPECT_EQ(rs[3].message, "igb: Intel(R) Gigabit Ethernet Network Driver - version 5.6.0-k");
}

TEST(KernelLogFormats, JournalShortPreciseAndShortIsoRead) {
  // xid_formats.txt's journal line ("May 18 19:02:39 kernel: NVRM: Xid ..."), as -o
  // short-precise, -o short-iso and short-iso-precise print it.
  const std::string msg =
      "NVRM: Xid (PCI:0000:2b:00): 79, pid='<unknown>', name=<unknown>, GPU "
      "has fallen off the bus.";
  std::string format;
  auto rs =
      parse_kernel_log_text("May 18 19:02:39.123456 node7 kernel: " + msg + "\n" +
                                "2024-05-18T19:02:39+0000 node7 kernel: " + msg + "\n" +
                                "2024-05-18T21:02:39.500000+02:00 node7 kernel: " + msg + "\n" +
                                "2024-05-18T19:02:39+0000 node7 myapp[12]: " + msg + "\n",
                            &format);
  ASSERT_EQ(rs.size(), 4u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(rs[i].message, msg);
    EXPECT_EQ(rs[i].facility, 0);
  }
  EXPECT_FALSE(rs[0].unix_s);  // no year, no zone
  ASSERT_TRUE(rs[1].unix_s);
  EXPECT_DOUBLE_EQ(*rs[1].unix_s, 1716058959.0);
  ASSERT_TRUE(rs[2].unix_s);
  EXPECT_DOUBLE_EQ(*rs[2].unix_s, 1716058959.5);
  EXPECT_EQ(rs[3].facility, 1);  // another tag than "kernel" is user space's
  auto f = scan(rs, 1716058959 - 60);
  ASSERT_EQ(f.xids.size(), 1u);
  EXPECT_EQ(f.xids[0].count, 3);
  EXPECT_EQ(f.user_space_records, 1u);
  ASSERT_TRUE(f.xids[0].last_s);
  EXPECT_DOUBLE_EQ(*f.xids[0].last_s, 60.5);
}

TEST(KernelLogFormats, DmesgCtimeStampsStayUntimedForTheirZoneIsUnknown) {
  std::string format;
  auto rs = parse_kernel_log_text(fixture_text("gpud_dmesg_ctime_xid119.txt"), &format);
  ASSERT_FALSE(rs.empty());
  for (const auto& r : rs) {
    EXPECT_FALSE(r.time_s);
    EXPECT_FALSE(r.unix_s);
  }
  auto f = scan(rs, 1700000000);
  ASSERT_EQ(f.xids.size(), 1u);
  EXPECT_EQ(f.xids[0].xid, 119);
}

TEST(KernelLogFormats, WallTimesBeforeTheBootKeepNoTimeSinceBoot) {
  // A journal holds earlier boots' records: they are not this boot's.
  std::vector<KernelLogRecord> rs(1);
  rs[0].message = "x";
  rs[0].unix_s = 1000.0;
  place_wall_times(rs, 2000);
  EXPECT_FALSE(rs[0].time_s);
  place_wall_times(rs, 500);
  ASSERT_TRUE(rs[0].time_s);
  EXPECT_DOUBLE_EQ(*rs[0].time_s, 500.0);
}

}  // namespace
}  // namespace fabkit::probes
