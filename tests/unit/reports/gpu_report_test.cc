// The GPU health of a node report in every renderer and in node baselines, on a saved report of
// an 8x H100 node with a different fault on GPUs 1-7 (tests/fixtures/reports/node-h100-faults.json:
// `fabcheck node --json --sysroot EMPTY --nvml-replay tests/fixtures/nvml/h100_faults.json`).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "reports/baseline/node_baseline.h"
#include "reports/html/html_report.h"
#include "reports/prom/prom_text.h"
#include "reports/report_render.h"

namespace fabkit::reports {
namespace {

Json faults() {
  std::ifstream f(std::string(FABKIT_FIXTURES) + "/reports/node-h100-faults.json");
  return Json::parse(f);
}

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(GpuReport, PrometheusHasPerGpuHealthFamilies) {
  std::string t = prom::render(prom::node_families(faults()));
  EXPECT_TRUE(has_line(t,
                       "fabkit_node_gpu_ecc_errors{gpu=\"1\",bus_id=\"0000:2a:00.0\",type="
                       "\"uncorrected\",counter=\"volatile\"} 2"))
      << t;
  EXPECT_TRUE(has_line(t, "fabkit_node_gpu_remap_pending{gpu=\"2\",bus_id=\"0000:3a:00.0\"} 1"));
  EXPECT_TRUE(has_line(t, "fabkit_node_gpu_remap_pending{gpu=\"0\",bus_id=\"0000:18:00.0\"} 0"));
  // Every reason is a 0/1 sample, so an alert can test one by name.
  EXPECT_TRUE(has_line(t,
                       "fabkit_node_gpu_clocks_event_reason{gpu=\"3\",bus_id=\"0000:5d:00.0\","
                       "reason=\"hw_thermal_slowdown\"} 1"));
  EXPECT_TRUE(has_line(t,
                       "fabkit_node_gpu_clocks_event_reason{gpu=\"3\",bus_id=\"0000:5d:00.0\","
                       "reason=\"gpu_idle\"} 0"));
  EXPECT_TRUE(has_line(t,
                       "fabkit_node_gpu_clocks_event_reason{gpu=\"0\",bus_id=\"0000:18:00.0\","
                       "reason=\"gpu_idle\"} 1"));
  EXPECT_TRUE(
      has_line(t, "fabkit_node_gpu_temperature_celsius{gpu=\"3\",bus_id=\"0000:5d:00.0\"} 88"));
  EXPECT_TRUE(has_line(
      t, "fabkit_node_gpu_slowdown_temperature_celsius{gpu=\"3\",bus_id=\"0000:5d:00.0\"} 90"));
  EXPECT_TRUE(has_line(t,
                       "fabkit_node_gpu_pcie_width{gpu=\"4\",bus_id=\"0000:9a:00.0\",link="
                       "\"current\"} 8"));
  EXPECT_TRUE(has_line(t,
                       "fabkit_node_gpu_pcie_generation{gpu=\"4\",bus_id=\"0000:9a:00.0\",link="
                       "\"max\"} 5"));
  EXPECT_TRUE(has_line(t,
                       "fabkit_node_gpu_nvlink_active{gpu=\"5\",bus_id=\"0000:ab:00.0\",link="
                       "\"7\"} 0"));
  EXPECT_TRUE(has_line(t,
                       "fabkit_node_gpu_nvlink_errors{gpu=\"5\",bus_id=\"0000:ab:00.0\",link="
                       "\"0\",counter=\"crc_data\"} 0"));
  EXPECT_TRUE(has_line(t, "fabkit_node_gpu_processes{gpu=\"6\",bus_id=\"0000:ba:00.0\"} 1"));
  // The lost GPU answered nothing: no sample says 0 for it.
  EXPECT_EQ(t.find("gpu=\"7\""), std::string::npos) << t;
  EXPECT_TRUE(has_line(t, "fabkit_node_finding{code=\"gpu.lost\",severity=\"fail\"} 1"));
}

TEST(GpuReport, PrometheusRefusesAWrongTypeNamingTheField) {
  Json doc = faults();
  doc["gpus"]["devices"][2]["health"]["temperature_c"] = "hot";
  try {
    prom::node_families(doc);
    FAIL() << "accepted a string temperature";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("gpus.devices[2].health.temperature_c"), std::string::npos)
        << e.what();
  }
}

TEST(GpuReport, TextHasAHealthTableAndALinePerGpu) {
  std::ostringstream out;
  render_text(report_from_json(faults()), out);
  std::string t = out.str();
  EXPECT_NE(t.find("GPU health (NVML"), std::string::npos) << t;
  EXPECT_TRUE(std::regex_search(t, std::regex("\n +2 +on +0/0 +0/1 pending +")))
      << "GPU 2's row: ECC on, no uncorrected errors, a remap pending\n"
      << t;
  EXPECT_TRUE(std::regex_search(t, std::regex("Gen4 x8 of Gen5 x16"))) << t;
  EXPECT_TRUE(std::regex_search(t, std::regex("hw_slowdown,hw_thermal_slowdown"))) << t;
  EXPECT_TRUE(std::regex_search(t, std::regex("17/18"))) << t;
  EXPECT_NE(t.find("GPU 0 (0000:18:00.0): ok\n"), std::string::npos) << t;
  EXPECT_NE(t.find("GPU 1 (0000:2a:00.0): FAIL gpu.ecc_uncorrected\n"), std::string::npos) << t;
  EXPECT_NE(t.find("GPU 6 (0000:ba:00.0): warn gpu.busy\n"), std::string::npos) << t;
  EXPECT_NE(t.find("GPU 7 (0000:db:00.0): FAIL gpu.lost; warn gpu.query_failed\n"),
            std::string::npos)
      << t;
}

// A saved report given to `fabcheck report` is untrusted text: what the GPU table prints from it
// reaches the terminal as characters.
TEST(GpuReport, TextOfAnUntrustedReportIsTerminalSafe) {
  Json doc = faults();
  doc["gpus"]["devices"][0]["health"]["clocks_event_reasons"]["reasons"] =
      Json::array({"gpu_idle\x1b]0;owned\x07"});
  doc["findings"].push_back({{"severity", "warn"},
                             {"code", "gpu.x\x1b[2J"},
                             {"subject", "0000:18:00.0"},
                             {"message", "m"},
                             {"fix", "f"}});
  std::ostringstream out;
  render_text(report_from_json(doc), out);
  EXPECT_EQ(out.str().find('\x1b'), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("gpu_idle\\x1b]0;owned\\x07"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("GPU 0 (0000:18:00.0): warn gpu.x\\x1b[2J"), std::string::npos)
      << out.str();
}

TEST(GpuReport, HtmlNodePageHasTheGpuTable) {
  std::string h = html::node_section(faults());
  EXPECT_NE(h.find("<h3>GPU health (NVML)</h3>"), std::string::npos);
  EXPECT_NE(h.find("<td class=\"num\">0 / 1 (pending)</td>"), std::string::npos) << h;
  EXPECT_NE(h.find("<td>hw_slowdown, hw_thermal_slowdown</td>"), std::string::npos);
  EXPECT_NE(h.find("<td>Gen4 x8 / Gen5 x16</td>"), std::string::npos);
  EXPECT_NE(h.find("<td class=\"num\">17 / 18</td>"), std::string::npos);
  EXPECT_NE(h.find("<td>1 · pid 48213</td>"), std::string::npos) << h;
  Json doc = faults();
  doc["gpus"]["devices"] = "x";
  EXPECT_THROW(html::node_section(doc), std::invalid_argument);
}

// A node report whose limits could not be read (an empty --sysroot tree) has memlock_bytes null:
// the page says unknown instead of failing on it.
TEST(GpuReport, HtmlNodePageWithUnreadableLimits) {
  Json doc = faults();
  ASSERT_TRUE(doc["limits"]["memlock_bytes"].is_null());
  std::string h = html::node_section(doc);
  EXPECT_NE(h.find("<tr><th>memlock (soft / hard)</th><td>unknown / unknown</td></tr>"),
            std::string::npos)
      << h;
}

// New errors since a saved run: the aggregate counters where both have them.
TEST(GpuReport, BaselineNamesNewEccRemapAndNvlinkErrors) {
  Json old_doc = faults();
  Json now = old_doc;
  auto& d = now["gpus"]["devices"];
  d[0]["health"]["ecc"]["aggregate"]["corrected"] = 3;
  d[0]["health"]["ecc"]["volatile"]["corrected"] = 3;
  d[1]["health"]["ecc"]["aggregate"]["uncorrected"] = 5;
  d[1]["health"]["ecc"]["volatile"]["uncorrected"] = 5;
  d[2]["health"]["remapped_rows"]["uncorrected"] = 2;
  d[5]["health"]["nvlinks"][3]["replay"] = 4;
  auto r = baseline::compare_node_baseline(old_doc, now);
  std::vector<std::string> codes;
  for (const auto& f : r.findings) codes.push_back(f.code + " " + f.subject);
  ASSERT_EQ(codes,
            (std::vector<std::string>{"baseline.gpu_ecc_corrected_new GPU 0 (0000:18:00.0)",
                                      "baseline.gpu_ecc_uncorrected_new GPU 1 (0000:2a:00.0)",
                                      "baseline.gpu_remap_new GPU 2 (0000:3a:00.0)",
                                      "baseline.gpu_nvlink_errors_new GPU 5 (0000:ab:00.0)"}));
  EXPECT_EQ(r.findings[1].severity, Severity::kFail);
  EXPECT_NE(r.findings[1].message.find("3 new uncorrectable ECC error(s) (aggregate counter)"),
            std::string::npos)
      << r.findings[1].message;
  EXPECT_EQ(r.gpu_health.size(), 7u);  // the lost GPU has no counters in either report
  Json j = baseline::node_baseline_to_json(r, "old.json", "new.json");
  EXPECT_EQ(j["gpu_health"][1]["ecc_uncorrected_new"], 3);
  EXPECT_EQ(j["gpu_health"][1]["ecc_counter"], "aggregate");
  std::string text = baseline::node_baseline_table_text(r);
  EXPECT_TRUE(
      std::regex_search(text, std::regex("GPU 1 \\(0000:2a:00.0\\) +3 +0 +0 +0 +aggregate")))
      << text;
  // The same report twice: nothing new.
  EXPECT_TRUE(baseline::compare_node_baseline(old_doc, old_doc).findings.empty());
}

TEST(GpuReport, BaselineAfterADriverReloadCountsTodaysVolatileErrors) {
  Json old_doc = faults();
  for (auto& d : old_doc["gpus"]["devices"]) {
    if (!d["health"].is_object()) continue;
    d["health"]["ecc"]["aggregate"] = {{"corrected", nullptr}, {"uncorrected", nullptr}};
  }
  old_doc["gpus"]["devices"][1]["health"]["ecc"]["volatile"]["uncorrected"] = 7;
  Json now = old_doc;
  now["gpus"]["devices"][1]["health"]["ecc"]["volatile"]["uncorrected"] = 1;  // reloaded, then 1
  auto r = baseline::compare_node_baseline(old_doc, now);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].code, "baseline.gpu_ecc_uncorrected_new");
  EXPECT_NE(r.findings[0].message.find("1 new uncorrectable ECC error(s) (volatile counter)"),
            std::string::npos)
      << r.findings[0].message;
  now["gpus"]["devices"][1]["health"]["ecc"]["volatile"]["uncorrected"] = "7";
  EXPECT_THROW(baseline::compare_node_baseline(old_doc, now), std::invalid_argument);
}

}  // namespace
}  // namespace fabkit::reports
