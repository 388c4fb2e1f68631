// NVSwitch SXid lines on real logs (tests/fixtures/kernel_log/README.md): parsed with their detail
// lines, grouped per switch and SXid, judged from the line and NVIDIA's Fabric Manager catalogue.
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

KernelLogFacts scan(const std::string& text, std::optional<std::vector<std::string>> devices) {
  KernelLogFacts f;
  f.readable = true;
  f.gpu_bus_ids = std::move(devices);
  scan_kernel_log(parse_kernel_log_text(text, &f.format), {}, f);
  return f;
}

const SxidGroup* group(const KernelLogFacts& f, int sxid, const std::string& bus) {
  for (const auto& g : f.sxids)
    if (g.sxid == sxid && g.bus_id == bus) return &g;
  return nullptr;
}

TEST(KernelLogSxid, ParsesTheReportAndItsDetailLines) {
  auto fatal = parse_sxid_line(
      "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 63 LTSSM Fault Up");
  ASSERT_TRUE(fatal);
  EXPECT_EQ(fatal->device, "nvidia-nvswitch0");
  EXPECT_EQ(fatal->bus, "0000:05:00.0");
  EXPECT_EQ(fatal->sxid, 20034);
  EXPECT_EQ(fatal->kind, SxidLine::Kind::kFatal);
  EXPECT_EQ(fatal->link, 63);
  EXPECT_EQ(fatal->what, "LTSSM Fault Up");
  auto nonfatal = parse_sxid_line(
      "nvidia-nvswitch2: SXid (PCI:0000:85:00.0): 12028, Non-fatal, Link 61 egress non-posted "
      "PRIV error (First)");
  ASSERT_TRUE(nonfatal);
  EXPECT_EQ(nonfatal->kind, SxidLine::Kind::kNonFatal);
  EXPECT_EQ(nonfatal->what, "egress non-posted PRIV error");
  auto detail = parse_sxid_line(
      "nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Severity 1 Engine instance 60 Sub-engine "
      "instance 00");
  ASSERT_TRUE(detail);
  EXPECT_EQ(detail->kind, SxidLine::Kind::kDetail);
  // Not from the start of the record, or not the driver's shape: no SXid.
  EXPECT_FALSE(parse_sxid_line(
      "python3[42]: segfault at 0 ip 0 error 4 in nvidia-nvswitch0: SXid (PCI:0000:05:00.0): "
      "20034, Fatal, Link 1 x[7f00+1000]"));
  EXPECT_FALSE(parse_sxid_line("nvidia-nvswitch0: SXid (invalid): some error"));
  EXPECT_FALSE(parse_sxid_line("nvidia-nvswitch0: SXid (PCI:0000:00:00.0): xyz, Fatal error"));
}

TEST(KernelLogSxid, FatalLtssmFaultsDrainPerSwitchWithTheirLinks) {
  // leptonai/gpud's README log: Xid 79, then SXid 20034 Fatal on three NVSwitches.
  auto f = scan(
      fixture_text("gpud_sxid_20034_xid79.txt"),
      std::vector<std::string>{"0000:91:00.0", "0000:05:00.0", "0000:06:00.0", "0000:07:00.0"});
  ASSERT_EQ(f.sxids.size(), 3u);
  const auto* sw0 = group(f, 20034, "0000:05:00.0");
  ASSERT_TRUE(sw0);
  EXPECT_EQ(sw0->device, "nvidia-nvswitch0");
  EXPECT_EQ(sw0->count, 2);  // two Fatal reports; Data and Severity lines are their details
  EXPECT_TRUE(sw0->fatal);
  EXPECT_EQ(sw0->links, (std::vector<int>{62, 63}));
  EXPECT_EQ(sw0->what, "LTSSM Fault Up");
  EXPECT_EQ(sw0->cls, SxidClass::kDrain);
  const auto fs = judge_kernel_log(f);
  const Finding* d = finding_for(fs, "SXid 20034 0000:05:00.0");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->code, "kernel_log.sxid_drain");
  EXPECT_EQ(d->severity, Severity::kFail);
  EXPECT_NE(d->message.find("link(s) 62, 63"), std::string::npos) << d->message;
  const Finding* read = finding_for(fs, "kernel log");
  ASSERT_TRUE(read);
  EXPECT_NE(read->message.find("3 NVSwitch SXid group(s)"), std::string::npos) << read->message;
  const Finding* sw2 = finding_for(fs, "SXid 20034 0000:07:00.0");
  ASSERT_TRUE(sw2);
  EXPECT_EQ(sw2->severity, Severity::kFail);
}

TEST(KernelLogSxid, ASwitchNotOnThisNodeNeverDrains) {
  auto f =
      scan(fixture_text("gpud_sxid_20034_xid79.txt"), std::vector<std::string>{"0000:91:00.0"});
  const auto fs = judge_kernel_log(f);
  const Finding* d = finding_for(fs, "SXid 20034 0000:05:00.0");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->code, "kernel_log.not_a_gpu");
  EXPECT_EQ(d->severity, Severity::kWarn);
  auto unknown = scan(fixture_text("gpud_sxid_20034_xid79.txt"), std::nullopt);
  for (const auto& x : judge_kernel_log(unknown))
    if (x.subject.rfind("SXid ", 0) == 0) EXPECT_NE(x.severity, Severity::kFail) << x.message;
}

TEST(KernelLogSxid, NonFatalSxidsFollowTheCatalogue) {
  auto f = scan(fixture_text("sxid_nonfatal.txt"),
                std::vector<std::string>{"0000:04:00.0", "0000:85:00.0"});
  const auto* dlreq = group(f, 22013, "0000:04:00.0");
  ASSERT_TRUE(dlreq);
  EXPECT_EQ(dlreq->count, 3);
  EXPECT_FALSE(dlreq->fatal);
  EXPECT_EQ(dlreq->links, (std::vector<int>{44, 45, 46}));
  const auto fs = judge_kernel_log(f);
  // 22013 at boot: NVIDIA says it can be safely ignored.
  const Finding* boot = finding_for(fs, "SXid 22013 0000:04:00.0");
  ASSERT_TRUE(boot);
  EXPECT_EQ(boot->code, "kernel_log.sxid_informational");
  EXPECT_EQ(boot->severity, Severity::kInfo);
  // 12028: NVLink traffic stalls and CUDA jobs abort; gpud and imbue fail the node.
  const Finding* priv = finding_for(fs, "SXid 12028 0000:85:00.0");
  ASSERT_TRUE(priv);
  EXPECT_EQ(priv->code, "kernel_log.sxid_drain");
  EXPECT_EQ(priv->severity, Severity::kFail);
}

TEST(KernelLogSxid, AnSxidUserSpaceWroteIsNotJudged) {
  KernelLogFacts f;
  f.readable = true;
  f.gpu_bus_ids = std::vector<std::string>{"0000:05:00.0"};
  scan_kernel_log({{1.0,
                    "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 63 LTSSM "
                    "Fault Up",
                    1}},
                  {}, f);
  EXPECT_TRUE(f.sxids.empty());
}

}  // namespace
}  // namespace fabkit::probes
