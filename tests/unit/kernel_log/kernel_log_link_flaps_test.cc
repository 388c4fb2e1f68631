// Links going down, counted per device over time (link_flaps.h), on real lines
// (tests/fixtures/kernel_log/README.md): a flapping port fails as Azure NHC fails it, one down is
// a warning, and boot-time link lines (SATA ports, NIC ports being brought up) are no finding.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "probes/kernel_log/kernel_log_facts.h"
#include "probes/kernel_log/link_flaps.h"
#include "tests/support/ttar.h"
#include "tests/unit/kernel_log/kernel_log_test_support.h"

namespace fabkit::probes {
namespace {

using test_support::fixture_text;

KernelLogFacts scan_text(const std::string& text) {
  KernelLogFacts f;
  f.readable = true;
  scan_kernel_log(parse_kernel_log_text(text, &f.format), {}, f);
  return f;
}

std::vector<Finding> for_subject(const std::vector<Finding>& fs, const std::string& subject) {
  std::vector<Finding> out;
  for (const auto& f : fs)
    if (f.subject == subject) out.push_back(f);
  return out;
}

TEST(KernelLogLinkFlaps, APortDownFiveTimesWithinADayIsFlappingAndFails) {
  // shredos.x86_64#212: an e1000e port down every ~4.6 s.
  auto f = scan_text(fixture_text("link_flaps.txt"));
  const LogEventGroup* g = nullptr;
  for (const auto& e : f.events)
    if (e.kind == "link_down" && e.device == "0000:00:1f.6") g = &e;
  ASSERT_TRUE(g);
  const LinkFlaps n = link_flaps(*g);
  EXPECT_EQ(n.later_downs, 8);
  EXPECT_EQ(n.max_downs_in_window, 8);
  const auto fs = for_subject(judge_kernel_log(f), "0000:00:1f.6");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "kernel_log.link_flapping");
  EXPECT_EQ(fs[0].severity, Severity::kFail);
  EXPECT_NE(fs[0].message.find("8 times within 24 h"), std::string::npos) << fs[0].message;
}

TEST(KernelLogLinkFlaps, OneDownIsAWarningNotAFlap) {
  // sonic-buildimage#7310: the igb management port went down once.
  auto f = scan_text(fixture_text("link_flaps.txt"));
  const auto fs = for_subject(judge_kernel_log(f), "0000:00:14.0");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "kernel_log.link_down");
  EXPECT_EQ(fs[0].severity, Severity::kWarn);
}

TEST(KernelLogLinkFlaps, SataLinkLinesAreNeverFindings) {
  auto f = scan_text(fixture_text("link_flaps.txt"));
  for (const auto& e : f.events) EXPECT_EQ(e.device.rfind("ata", 0), std::string::npos) << e.device;
  for (const auto& x : judge_kernel_log(f))
    EXPECT_EQ(x.message.find("SATA"), std::string::npos) << x.message;
}

TEST(KernelLogLinkFlaps, DownsWhileTheBootBringsPortsUpAreNoFlaps) {
  // The messages of real lines (sonic-buildimage#7310's igb port, shredos.x86_64#212's e1000e
  // port), at times since boot this test chooses: during the first two minutes, the driver
  // reporting a port before the network service brings it up.
  const std::vector<KernelLogRecord> boot = {
      {6.2, "igb 0000:00:14.0 eth0: igb: eth0 NIC Link is Down"},
      {7.9, "e1000e 0000:00:1f.6 eth0: NIC Link is Down"},
      {9.4, "e1000e 0000:00:1f.6 eth0: NIC Link is Up 1000 Mbps Full Duplex, Flow Control: None"}};
  KernelLogFacts f;
  f.readable = true;
  scan_kernel_log(boot, {}, f);
  ASSERT_EQ(f.events.size(), 2u);
  for (const auto& x : judge_kernel_log(f))
    EXPECT_NE(x.code.rfind("kernel_log.link", 0), 0u) << x.code << ": " << x.message;
  // The same port going down again later in the day is a warning, the boot's down not counted.
  auto later = boot;
  later.push_back({5000.0, "e1000e 0000:00:1f.6 eth0: NIC Link is Down"});
  KernelLogFacts g;
  g.readable = true;
  scan_kernel_log(later, {}, g);
  const auto fs = for_subject(judge_kernel_log(g), "0000:00:1f.6");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kWarn);
  EXPECT_NE(fs[0].message.find("1 time, at most 1 within 24 h"), std::string::npos)
      << fs[0].message;
  EXPECT_NE(fs[0].message.find("1 more in the first 120 s after boot"), std::string::npos)
      << fs[0].message;
}

TEST(KernelLogLinkFlaps, DownsSpreadOverDaysAreNotAFlap) {
  LogEventGroup g;
  g.kind = "link_down";
  g.down_times_s = {1000, 1000 + 30000, 1000 + 60000, 1000 + 90000, 1000 + 120000};
  g.count = 5;
  const LinkFlaps n = link_flaps(g);
  EXPECT_EQ(n.later_downs, 5);
  EXPECT_EQ(n.max_downs_in_window, 3);  // at most three fall within any 24 h
}

}  // namespace
}  // namespace fabkit::probes
