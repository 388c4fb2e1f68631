// The one renderer on an ib_qos section: text, HTML and Prometheus show the VL NCCL's SL reaches
// and mark a dropped one; a report without IB ports prints nothing for the section.
#include <gtest/gtest.h>

#include <sstream>

#include "reports/html/html_report.h"
#include "reports/prom/prom_text.h"
#include "reports/report_render.h"
#include "tests/unit/ib_qos/fixture_run.h"

namespace fabkit::probes {
namespace {

using fabkit::testing::TempDir;

Report report_of(const std::string& fixture) {
  TempDir dir("ibqos-render");
  auto g = run_fixture(fixture, dir);
  Report r;
  r.kind = "node";
  r.hostname = "gpu-ib-01";
  r.findings = g.findings;
  r.sections.push_back({"ib_qos", to_json(g.facts)});
  return r;
}

Json doc_of(const Report& r) {
  Json doc = Json::object();
  for (const auto& s : r.sections) doc[s.name] = s.facts;
  return doc;
}

TEST(IbQosRender, TextMarksADroppedVl) {
  std::ostringstream healthy, vl15;
  reports::render_text(report_of("healthy"), healthy);
  reports::render_text(report_of("sl_to_vl15"), vl15);
  EXPECT_NE(healthy.str().find("IB QoS (the VL NCCL's SL 0 reaches"), std::string::npos)
      << healthy.str();
  EXPECT_EQ(healthy.str().find("DROPPED"), std::string::npos);
  EXPECT_NE(vl15.str().find("15 DROPPED"), std::string::npos) << vl15.str();
  EXPECT_NE(vl15.str().find("ib_qos.sl_to_vl15"), std::string::npos);
}

TEST(IbQosRender, HtmlRowOfADroppedVlIsAFailure) {
  EXPECT_EQ(reports::html::ib_qos_section(doc_of(report_of("healthy"))).find("sev-fail"),
            std::string::npos);
  const std::string html = reports::html::ib_qos_section(doc_of(report_of("sl_to_vl15")));
  EXPECT_NE(html.find("sev-fail"), std::string::npos) << html;
  EXPECT_NE(html.find("15 dropped"), std::string::npos) << html;
  EXPECT_EQ(reports::html::ib_qos_section(Json{{"ib_qos", {{"ports", Json::array()}}}}), "");
}

TEST(IbQosRender, PrometheusFamilies) {
  const std::string text =
      reports::prom::render(reports::prom::ib_qos_families(doc_of(report_of("path_sl_differs"))));
  EXPECT_NE(text.find("fabkit_node_ib_nccl_vl{device=\"mlx5_0\",port=\"1\"} 0"), std::string::npos)
      << text;
  EXPECT_NE(text.find("fabkit_node_ib_data_vls{device=\"mlx5_0\",port=\"1\"} 4"),
            std::string::npos);
  EXPECT_NE(text.find("fabkit_node_ib_path_record_sl{device=\"mlx5_0\",port=\"1\"} 2"),
            std::string::npos);
}

}  // namespace
}  // namespace fabkit::probes
