// The `gpu_active` section everywhere a node report goes: text (a table per GPU: measured,
// expected, fraction), HTML, Prometheus lines, and node baselines (a drop against the saved run).
// The section is the judge's own JSON of a synthetic two-GPU H100 node.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "common/report.h"
#include "probes/gpu_active/gpu_active_facts.h"
#include "reports/baseline/node_baseline.h"
#include "reports/html/html_gpu_active.h"
#include "reports/html/html_report.h"
#include "reports/prom/prom_text.h"
#include "reports/report_render.h"

namespace fabkit {
namespace {

probes::GpuActiveFacts two_h100(double gemm1 = 745.2) {
  probes::GpuActiveFacts f;
  f.status = "ran";
  f.elapsed_ms = 9300;
  for (int i = 0; i < 2; ++i) {
    probes::ActiveGpu g;
    g.cuda_index = i;
    g.name = "NVIDIA H100 80GB HBM3";
    g.bus_id = i == 0 ? "0000:18:00.0" : "0000:2a:00.0";
    g.link_under_load = {5, 16};
    g.link_max = {5, 16};
    g.upstream_max = {5, 16};
    auto add = [&](const char* n, double v) {
      probes::ActiveFigure x;
      x.name = n;
      x.measured = v;
      x.iters = 10;
      g.figures.push_back(x);
    };
    add(probes::kFigureGemm, i == 1 ? gemm1 : 760.0);
    add(probes::kFigureDeviceCopy, 2960);
    add(probes::kFigureH2d, 54.1);
    add(probes::kFigureD2h, 55.0);
    add(probes::kFigureH2dConcurrent, 27.2);
    add(probes::kFigureD2hConcurrent, 54.8);
    f.gpus.push_back(g);
  }
  probes::ActiveAllreduce a;
  a.algorithm = "Ring";
  a.status = "ok";
  a.ranks = 2;
  a.bytes = 1ull << 30;
  a.busbw_gb_per_s = 361.5;
  f.allreduce.push_back(a);
  return f;
}

Json node_doc(const probes::GpuActiveFacts& f) {
  Report r = new_report("node");
  r.findings = probes::judge_gpu_active(f);
  r.sections.push_back({"gpus", {{"count", 2}}});
  r.sections.push_back({"gpu_active", probes::to_json(f)});
  return report_to_json(r);
}

TEST(GpuActiveRender, TextHasATablePerGpuWithMeasuredExpectedAndFraction) {
  Report r = report_from_json(node_doc(two_h100(400)));
  std::ostringstream out;
  reports::render_text(r, out, false);
  std::string t = out.str();
  EXPECT_NE(t.find("active GPU check: ran in 9.3 s"), std::string::npos) << t;
  EXPECT_NE(t.find("GPU 1 NVIDIA H100 80GB HBM3 (0000:2a:00.0; model H100 SXM5 80GB; PCIe Gen5 x16 "
                   "under load, can train Gen5 x16)"),
            std::string::npos)
      << t;
  // gemm of GPU 1: 400 of 742.05 = 54%.
  EXPECT_TRUE(std::regex_search(
      t, std::regex(R"(gemm_bf16\s+400\.0\s+742\.0\s+TFLOPS\s+54%\s+H100 SXM5 80GB datasheet)")))
      << t;
  EXPECT_TRUE(std::regex_search(t, std::regex(R"(h2d_concurrent\s+27\.2\s+53\.6\s+GB/s\s+51%)")))
      << t;
  EXPECT_TRUE(
      std::regex_search(t, std::regex(R"(Ring\s+ok\s+2\s+1024 MiB\s+361\.5\s+360\.0\s+100%)")))
      << t;
  EXPECT_NE(t.find("gpu_active.gemm_low"), std::string::npos);
}

TEST(GpuActiveRender, NoSectionNoText) {
  Report r = new_report("node");
  r.sections.push_back({"gpus", {{"count", 0}}});
  std::ostringstream out;
  reports::render_text(r, out, false);
  EXPECT_EQ(out.str().find("active GPU check"), std::string::npos);
}

TEST(GpuActiveRender, PrometheusInBaseUnits) {
  std::string text = reports::prom::render(reports::prom::node_families(node_doc(two_h100())));
  EXPECT_NE(text.find("fabkit_node_gpu_active_ran{status=\"ran\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(
      text.find(
          "fabkit_node_gpu_gemm_bf16_flops{gpu=\"1\",bus_id=\"0000:2a:00.0\"} 745200000000000\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("fabkit_node_gpu_copy_bytes_per_second{gpu=\"0\",bus_id=\"0000:18:00.0\","
                      "direction=\"h2d\",mode=\"concurrent\"} 27200000000\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("direction=\"d2d\",mode=\"alone\"} 2960000000000\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("fabkit_node_gpu_allreduce_busbw_bytes_per_second{algorithm=\"Ring\",ranks="
                      "\"2\"} 361500000000\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("fabkit_node_gpu_active_fraction{gpu=\"0\",bus_id=\"0000:18:00.0\",figure="
                      "\"gemm_bf16\"}"),
            std::string::npos);
  // Without the section: none of these families.
  Report plain = new_report("node");
  EXPECT_EQ(
      reports::prom::render(reports::prom::node_families(report_to_json(plain))).find("gpu_active"),
      std::string::npos);
  // A wrong type is named.
  Json bad = node_doc(two_h100());
  bad["gpu_active"]["gpus"][0]["figures"][0]["measured"] = "fast";
  try {
    reports::prom::node_families(bad);
    FAIL() << "a string figure must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("gpu_active.gpus[0].figures[0].measured"),
              std::string::npos)
        << e.what();
  }
}

TEST(GpuActiveRender, HtmlNodePageHasTheTables) {
  std::string html = reports::html::node_section(node_doc(two_h100(400)));
  EXPECT_NE(html.find("<h3>Active GPU check</h3>"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"sev-warn\"><td>gemm_bf16</td><td class=\"num\">400</td>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("NCCL all-reduce over the node's GPUs"), std::string::npos);
  Json bad = node_doc(two_h100());
  bad["gpu_active"]["allreduce"] = "none";
  EXPECT_THROW(reports::html::node_section(bad), std::invalid_argument);
}

TEST(GpuActiveRender, BaselineFailsADropAndWarnsAMissingFigure) {
  Json old_doc = node_doc(two_h100());
  probes::GpuActiveFacts now = two_h100(/*gemm1=*/600);        // 745.2 -> 600: -19.5%
  now.gpus[0].figures.erase(now.gpus[0].figures.begin() + 2);  // h2d of GPU 0 gone
  now.allreduce[0].busbw_gb_per_s = 340;                       // -5.9%: within the noise
  auto r = reports::baseline::compare_node_baseline(old_doc, node_doc(now));
  ASSERT_TRUE(r.gpu_active.present);
  std::vector<std::string> codes;
  for (const auto& f : r.findings)
    if (f.code.rfind("baseline.gpu_active", 0) == 0)
      codes.push_back(f.code + " " + f.subject + " " + f.message);
  ASSERT_EQ(codes.size(), 2u) << ::testing::PrintToString(codes);
  EXPECT_NE(codes[0].find("baseline.gpu_active_missing GPU 0000:18:00.0 h2d was 54.1 GB/s"),
            std::string::npos)
      << codes[0];
  EXPECT_NE(
      codes[1].find(
          "baseline.gpu_active_dropped GPU 0000:2a:00.0 gemm_bf16 745.2 → 600.0 TFLOPS (-19.5%)"),
      std::string::npos)
      << codes[1];
  Json j = reports::baseline::node_baseline_to_json(r, "old.json", "new.json");
  ASSERT_TRUE(j.contains("gpu_active"));
  EXPECT_EQ(j["gpu_active"][0]["subject"], "GPU 0000:18:00.0");
  std::string table = reports::baseline::node_baseline_table_text(r);
  EXPECT_TRUE(std::regex_search(
      table, std::regex(R"(GPU 0000:2a:00\.0\s+gemm_bf16\s+745\.2\s+600\.0\s+TFLOPS)")))
      << table;
  // Two reports without the section: no key, no table (older baselines read as before).
  Report plain = new_report("node");
  Json p = report_to_json(plain);
  auto none = reports::baseline::compare_node_baseline(p, p);
  EXPECT_FALSE(reports::baseline::node_baseline_to_json(none, "a", "b").contains("gpu_active"));
  EXPECT_EQ(reports::baseline::node_baseline_table_text(none).find("Active GPU"),
            std::string::npos);
}

}  // namespace
}  // namespace fabkit
