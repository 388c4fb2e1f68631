// Xid severities against NVIDIA's catalog and the peers' checks (xid_catalog.cc names them): what
// an application causes is a note, what the peers drain on is a drain, on real lines
// (tests/fixtures/kernel_log/README.md).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "probes/kernel_log/kernel_log_facts.h"
#include "tests/support/ttar.h"
#include "tests/unit/kernel_log/kernel_log_test_support.h"

namespace fabkit::probes {
namespace {

using test_support::finding_for;
using test_support::fixture_text;

KernelLogFacts scan(const std::string& text, std::vector<std::string> gpus) {
  KernelLogFacts f;
  f.readable = true;
  f.gpu_bus_ids = std::move(gpus);
  scan_kernel_log(parse_kernel_log_text(text, &f.format), {}, f);
  return f;
}

TEST(KernelLogXidSeverity, ApplicationXidsFromAUsersKernelAreNotesNotWarnings) {
  auto f =
      scan(fixture_text("xid_severities.txt"), {"0000:00:05.0", "0000:00:07.0", "0000:04:00.0"});
  auto fs = judge_kernel_log(f);
  const Finding* x43 = finding_for(fs, "Xid 43 0000:00:05.0");
  ASSERT_TRUE(x43);
  EXPECT_EQ(x43->code, "kernel_log.xid_application");
  EXPECT_EQ(x43->severity, Severity::kInfo);
  EXPECT_NE(x43->message.find("2 times"), std::string::npos) << x43->message;
  const Finding* x31 = finding_for(fs, "Xid 31 0000:00:07.0");
  ASSERT_TRUE(x31);
  EXPECT_EQ(x31->severity, Severity::kInfo);
  EXPECT_NE(x31->message.find("python3.10"), std::string::npos) << x31->message;
}

TEST(KernelLogXidSeverity, XidsThePeersDrainOnDrain) {
  // Xid 69: Azure NHC, imbue and gpud (Fatal) all fail the node on it.
  auto f =
      scan(fixture_text("xid_severities.txt"), {"0000:00:05.0", "0000:00:07.0", "0000:04:00.0"});
  const auto fs = judge_kernel_log(f);
  const Finding* x69 = finding_for(fs, "Xid 69 0000:04:00.0");
  ASSERT_TRUE(x69);
  EXPECT_EQ(x69->code, "kernel_log.xid_drain");
  EXPECT_EQ(x69->severity, Severity::kFail);
  // The others the issue named, each failed by Azure NHC and imbue (gpud too for 68, 69, 81).
  for (int code : {56, 57, 58, 68, 69, 73, 80, 81}) {
    const XidInfo* x = find_xid(code);
    ASSERT_TRUE(x) << code;
    EXPECT_EQ(x->cls, XidClass::kDrain) << code;
  }
}

TEST(KernelLogXidSeverity, NonfatalNvlink5LinesNeedNoActionAndStayNotes) {
  // leptonai/gpud#1174's lines: a Nonfatal RLW_RXPIPE and a Fatal NETIR.
  auto f = scan(
      "NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 "
      "0x00000001 0x00000000 0x00100000 0x00000004)\n"
      "NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 "
      "0x00000000 0x00000000 0x00000000 0x00000000)\n",
      {"0018:01:00.0", "0019:01:00.0"});
  auto fs = judge_kernel_log(f);
  const Finding* nonfatal = finding_for(fs, "Xid 145 0018:01:00.0");
  ASSERT_TRUE(nonfatal);
  EXPECT_EQ(nonfatal->severity, Severity::kInfo);
  const Finding* fatal = finding_for(fs, "Xid 149 0019:01:00.0");
  ASSERT_TRUE(fatal);
  EXPECT_EQ(fatal->severity, Severity::kFail);
}

TEST(KernelLogXidSeverity, AnApplicationXidOnAnotherBusIsANoteToo) {
  auto f = scan(fixture_text("xid_severities.txt"), {"0000:99:00.0"});
  const auto fs = judge_kernel_log(f);
  const Finding* x43 = finding_for(fs, "Xid 43 0000:00:05.0");
  ASSERT_TRUE(x43);
  EXPECT_EQ(x43->code, "kernel_log.not_a_gpu");
  EXPECT_EQ(x43->severity, Severity::kInfo);
}

}  // namespace
}  // namespace fabkit::probes
