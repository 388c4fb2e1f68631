// Every renderer of the node report's `pcie` and `kernel_log` sections, on node reports built by
// the probes from the fixture trees: text, Prometheus, HTML and the node baseline.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "probes/kernel_log/kernel_log_facts.h"
#include "probes/pcie/pcie_facts.h"
#include "reports/baseline/node_baseline.h"
#include "reports/html/html_report.h"
#include "reports/prom/prom_text.h"
#include "reports/report_render.h"
#include "tests/support/ttar.h"

namespace fabkit {
namespace {

using testing::TempDir;

// A node report with only the two sections, as run_node_probe builds them, from the fixture tree
// with the given overlays and kernel log file.
Json node_report(const std::vector<std::string>& overlays, const std::string& log) {
  TempDir dir("pcie_reports");
  const auto fx = testing::project_fixtures();
  for (const char* base : {"sysfs_gpu_node.ttar", "pci_ids_excerpt.ttar"})
    testing::unpack_ttar(fx / "pcie" / base, dir.path(), "");
  for (const auto& o : overlays) testing::unpack_ttar(fx / "pcie" / o, dir.path(), "");
  if (!log.empty()) {
    std::ifstream in(fx / "kernel_log" / log);
    std::stringstream s;
    s << in.rdbuf();
    testing::write_file(dir.path() / "dev/kmsg", s.str());
  }
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(dir.path());
  auto pcie = probes::gather_pcie(ctx);
  auto klog = probes::gather_kernel_log(
      ctx, {probes::device_names(pcie), probes::nvidia_gpu_bus_ids(pcie)});
  Report r;
  r.kind = "node";
  r.hostname = "gpu-07";
  r.generated_at = "2026-11-26T08:00:00Z";
  for (auto& f : probes::judge_pcie(pcie)) r.findings.push_back(f);
  for (auto& f : probes::judge_kernel_log(klog)) r.findings.push_back(f);
  r.sections.push_back({"pcie", probes::to_json(pcie)});
  r.sections.push_back({"kernel_log", probes::to_json(klog)});
  return report_to_json(r);
}

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(PcieReports, TextShowsTheLinksAndTheLogBeforeTheFindings) {
  Json doc = node_report({"overlay_gpu_gen4_x8.ttar"}, "dmesg_aer_fatal_xid79.txt");
  std::ostringstream out;
  reports::render_text(report_from_json(doc), out);
  const std::string t = out.str();
  const size_t links = t.find("PCIe links (trained vs what both ends can");
  const size_t log = t.find("kernel log: 13 records from");
  const size_t findings = t.find("\nfindings\n");
  ASSERT_NE(links, std::string::npos) << t;
  ASSERT_NE(log, std::string::npos) << t;
  ASSERT_NE(findings, std::string::npos);
  EXPECT_LT(links, findings);
  EXPECT_LT(log, findings);
  EXPECT_NE(t.find("0000:02:00.0  gpu     endpoint         Gen4 x8   Gen5 x16  NARROW"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("79  0000:02:00.0"), std::string::npos) << t;
  EXPECT_NE(t.find("aer_fatal        0000:00:02.0"), std::string::npos) << t;
}

TEST(PcieReports, PrometheusLinesPerDeviceAerAndXid) {
  Json doc = node_report({"overlay_gpu_gen4_x8.ttar", "overlay_aer_counts.ttar"},
                         "dmesg_aer_fatal_xid79.txt");
  const std::string t = reports::prom::render(reports::prom::node_families(doc));
  EXPECT_TRUE(has_line(
      t,
      "fabkit_node_pcie_link_generation{bus_id=\"0000:02:00.0\",role=\"gpu\",state=\"current\"} 4"))
      << t;
  EXPECT_TRUE(has_line(t,
                       "fabkit_node_pcie_link_generation{bus_id=\"0000:02:00.0\",role=\"gpu\","
                       "state=\"capable\"} 5"));
  EXPECT_TRUE(has_line(t,
                       "fabkit_node_pcie_link_width_lanes{bus_id=\"0000:02:00.0\",role=\"gpu\","
                       "state=\"current\"} 8"));
  EXPECT_TRUE(
      has_line(t, "fabkit_node_pcie_link_degraded{bus_id=\"0000:02:00.0\",role=\"gpu\"} 1"));
  EXPECT_TRUE(
      has_line(t, "fabkit_node_pcie_link_degraded{bus_id=\"0000:18:00.0\",role=\"gpu\"} 0"));
  EXPECT_TRUE(has_line(t,
                       "fabkit_node_pcie_aer_errors_total{bus_id=\"0000:00:02.0\",role=\"bridge\","
                       "severity=\"fatal\"} 1"));
  EXPECT_TRUE(has_line(t, "# TYPE fabkit_node_pcie_aer_errors_total counter"));
  EXPECT_TRUE(
      has_line(t, "fabkit_node_xid_events{xid=\"79\",bus_id=\"0000:02:00.0\",class=\"drain\"} 1"));
  EXPECT_TRUE(
      has_line(t, "fabkit_node_kernel_log_events{kind=\"aer_fatal\",device=\"0000:00:02.0\"} 1"));
  EXPECT_TRUE(has_line(t, "fabkit_node_kernel_log_readable 1"));
  // A wrongly typed field is an error naming it, not a guess.
  Json bad = doc;
  bad["pcie"]["devices"][0]["link"]["current_gen"] = "four";
  EXPECT_THROW(reports::prom::node_families(bad), std::invalid_argument);
}

TEST(PcieReports, HtmlNodePageHasTheLinksAndTheXids) {
  Json doc = node_report({"overlay_gpu_gen4_x8.ttar"}, "dmesg_aer_fatal_xid79.txt");
  const std::string h = reports::html::node_section(doc);
  EXPECT_NE(h.find("<h3>PCIe links</h3>"), std::string::npos);
  EXPECT_NE(
      h.find("<tr class=\"sev-fail\"><td>0000:02:00.0</td><td>gpu</td><td>endpoint</td><td>Gen4 "
             "x8</td><td>Gen5 x16</td>"),
      std::string::npos)
      << h;
  EXPECT_NE(h.find("<h3>Kernel log</h3>"), std::string::npos);
  EXPECT_NE(h.find("NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus."),
            std::string::npos);
  Json unread = node_report({}, "");
  EXPECT_NE(reports::html::node_section(unread).find("<p>unknown: "), std::string::npos);
}

// An Xid about a bus where the node has no GPU (kernel_log.not_a_gpu) is not shown as a drain.
TEST(PcieReports, AnXidWithoutAGpuAtItsBusIsNotShownAsADrain) {
  Json doc = node_report({}, "dmesg_aer_fatal_xid79.txt");
  ASSERT_EQ(doc["kernel_log"]["xids"][0]["on_gpu"], true);
  doc["kernel_log"]["xids"][0]["on_gpu"] = false;
  std::ostringstream out;
  reports::render_text(report_from_json(doc), out);
  EXPECT_NE(out.str().find("drain (no GPU at this bus here)"), std::string::npos) << out.str();
  const std::string h = reports::html::node_section(doc);
  EXPECT_NE(h.find("<td class=\"sev\">drain (no GPU at this bus here)</td>"), std::string::npos)
      << h;
}

TEST(PcieReports, NodeBaselineCatchesALinkThatGotWorseNewAerAndNewXids) {
  Json old_doc = node_report({}, "");
  Json new_doc = node_report({"overlay_gpu_gen4_x8.ttar", "overlay_aer_counts.ttar"},
                             "dmesg_aer_fatal_xid79.txt");
  auto r = reports::baseline::compare_node_baseline(old_doc, new_doc);
  auto find = [&](const std::string& code, const std::string& subject) -> const Finding* {
    for (const auto& f : r.findings)
      if (f.code == code && f.subject == subject) return &f;
    return nullptr;
  };
  const Finding* link = find("baseline.pcie_link_dropped", "0000:02:00.0");
  ASSERT_TRUE(link);
  EXPECT_EQ(link->severity, Severity::kFail);
  EXPECT_NE(link->message.find("link Gen5 x16 in the baseline, Gen4 x8 now"), std::string::npos);
  const Finding* aer = find("baseline.pcie_aer_new", "0000:00:02.0");
  ASSERT_TRUE(aer);
  EXPECT_EQ(aer->severity, Severity::kFail);
  EXPECT_NE(aer->message.find("fatal +1"), std::string::npos);
  EXPECT_EQ(find("baseline.pcie_aer_new", "0000:18:00.0")->severity, Severity::kWarn);
  const Finding* xid = find("baseline.xid_new", "Xid 79 0000:02:00.0");
  ASSERT_TRUE(xid);
  EXPECT_EQ(xid->severity, Severity::kFail);
  Json j = reports::baseline::node_baseline_to_json(r, "old.json", "new.json");
  EXPECT_EQ(j["pcie"]["xids"][0]["new_count"], 1);
  EXPECT_NE(reports::baseline::node_baseline_table_text(r).find("Xids, baseline vs new"),
            std::string::npos);
  // An Xid about a bus where the new report found no GPU (kernel_log.not_a_gpu) is no drain here
  // either; a report from before the field counts its Xids as the GPUs' (above).
  Json elsewhere = new_doc;
  elsewhere["kernel_log"]["xids"][0]["on_gpu"] = false;
  auto re = reports::baseline::compare_node_baseline(old_doc, elsewhere);
  const Finding* other = nullptr;
  for (const auto& f : re.findings)
    if (f.code == "baseline.xid_new") other = &f;
  ASSERT_TRUE(other);
  EXPECT_EQ(other->severity, Severity::kWarn);
  EXPECT_NE(other->message.find("0000:02:00.0 is not a GPU of the new report's node"),
            std::string::npos)
      << other->message;
  // More lines of an application Xid (a user's faulting kernel) are a note, as in the node
  // report (xid_catalog.cc), on this node's GPU or another bus.
  for (bool here : {true, false}) {
    Json app = new_doc;
    app["kernel_log"]["xids"][0]["class"] = "application";
    app["kernel_log"]["xids"][0]["on_gpu"] = here;
    auto ra = reports::baseline::compare_node_baseline(old_doc, app);
    const Finding* note = nullptr;
    for (const auto& f : ra.findings)
      if (f.code == "baseline.xid_new") note = &f;
    ASSERT_TRUE(note);
    EXPECT_EQ(note->severity, Severity::kInfo) << here << ": " << note->message;
  }
  elsewhere["kernel_log"]["xids"][0]["on_gpu"] = "no";
  EXPECT_THROW(reports::baseline::compare_node_baseline(old_doc, elsewhere), std::invalid_argument);
  // An idle GPU's slower link between two runs is a warning; a GPU gone from the bus a fail.
  Json idle = node_report({"overlay_gpu_idle_gen1.ttar"}, "");
  auto ri = reports::baseline::compare_node_baseline(old_doc, idle);
  ASSERT_EQ(ri.pcie.findings.size(), 1u);
  EXPECT_EQ(ri.pcie.findings[0].severity, Severity::kWarn);
  Json gone = old_doc;
  Json kept = Json::array();
  for (const auto& d : gone["pcie"]["devices"])
    if (d["bus_id"] != "0000:18:00.0") kept.push_back(d);
  gone["pcie"]["devices"] = kept;
  auto rg = reports::baseline::compare_node_baseline(old_doc, gone);
  ASSERT_EQ(rg.pcie.findings.size(), 1u);
  EXPECT_EQ(rg.pcie.findings[0].code, "baseline.pcie_device_lost");
  // Reports from before the sections compare as empty.
  Json before = old_doc;
  before.erase("pcie");
  before.erase("kernel_log");
  EXPECT_TRUE(reports::baseline::compare_node_baseline(before, before).pcie.findings.empty());
}

}  // namespace
}  // namespace fabkit
