#include "reports/chart/svg_chart.h"

#include <gtest/gtest.h>

#include <regex>

namespace fabkit::reports::chart {
namespace {

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(Scale, LinearAndLogMapKnownValues) {
  EXPECT_DOUBLE_EQ(Scale::linear(0, 10, 100, 200).map(5), 150);
  EXPECT_DOUBLE_EQ(Scale::linear(0, 10, 300, 100).map(10), 100);  // y grows upwards
  EXPECT_NEAR(Scale::log10(1, 1000, 0, 300).map(10), 100, 1e-9);
  EXPECT_NEAR(Scale::log10(4096, 16777216, 70, 550).map(65536), 70 + 480 * 4.0 / 12.0, 1e-9);
}

TEST(Scale, RejectsEmptyAndNonPositiveLogDomains) {
  EXPECT_THROW(Scale::linear(1, 1, 0, 1), std::invalid_argument);
  EXPECT_THROW(Scale::log10(0, 10, 0, 1), std::invalid_argument);
}

TEST(Ticks, NiceLinearStepsAndPowersForLogAxes) {
  EXPECT_EQ(linear_ticks(0, 9.3, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(linear_ticks(0, 1.25, 5), (std::vector<double>{0, 0.5, 1, 1.5}));
  EXPECT_EQ(log_ticks(4096, 16777216, 4),
            (std::vector<double>{4096, 16384, 65536, 262144, 1048576, 4194304, 16777216}));
  EXPECT_EQ(log_ticks(3, 2000, 10), (std::vector<double>{1, 10, 100, 1000}));
  EXPECT_EQ(format_bytes(1048576), "1M");
  EXPECT_EQ(format_bytes(4096), "4K");
  EXPECT_EQ(format_bytes(8), "8");
  EXPECT_EQ(format_number(12000), "12000");
  EXPECT_EQ(format_number(0.5), "0.5");
}

TEST(LineChart, PointsLandWhereTheAxesSayByHand) {
  LineChart c{"busbw",
              "size",
              "GB/s",
              true,
              false,
              true,
              {{"gloo", {{4096, 1.0}, {16777216, 2.0}}, "", false}},
              {},
              {}};
  std::string svg = render_line_chart(c);
  // Default 720x360: plot area x 70..550, y 312..34. Log x spans exactly the data (4K..16M); the
  // linear y axis runs 0..2 (ticks 0, 0.5, .. 2), so y=1 sits half way: (312+34)/2 = 173.
  EXPECT_NE(svg.find("<circle cx=\"70.00\" cy=\"173.00\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("<circle cx=\"550.00\" cy=\"34.00\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("points=\"70.00,173.00 550.00,34.00\""), std::string::npos);
  EXPECT_EQ(count(svg, "<circle"), 2);
  EXPECT_NE(svg.find(">16M</text>"), std::string::npos);  // x ticks as sizes
  EXPECT_NE(svg.find(">4K</text>"), std::string::npos);
  EXPECT_NE(svg.find("data-name=\"gloo\""), std::string::npos);
}

TEST(LineChart, ReferenceLineAndBandAtTheirValues) {
  LineChart c{"t",
              "x",
              "y",
              false,
              false,
              false,
              {{"s", {{0, 0}, {10, 4}}, "", false}},
              {{"link", 4.0, "#c0392b"}},
              {{"band", 3.0, 3.8, "#27ae60"}}};
  std::string svg = render_line_chart(c);
  auto [sx, sy] = line_chart_scales(c);
  EXPECT_EQ(sy.d1(), 4);  // the extent includes the line
  // y domain 0..4 over 312..34: y=4 at 34, 3.8 at 312-278*0.95 = 47.90, 3 at 103.50.
  EXPECT_NE(svg.find("class=\"refline\" data-name=\"link\" x1=\"70.00\" y1=\"34.00\""),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("class=\"band\" data-name=\"band\" x=\"70.00\" y=\"47.90\" width=\"480.00\" "
                     "height=\"55.60\""),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find(">link</text>"), std::string::npos);  // in the legend
}

TEST(LineChart, ErrorsNameTheProblem) {
  LineChart empty{"nothing", "x", "y", false, false, false, {}, {}, {}};
  try {
    render_line_chart(empty);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'nothing': no series has a point"), std::string::npos);
  }
  LineChart neg{"t", "x", "y", true, false, false, {{"s", {{0, 1}}, "", false}}, {}, {}};
  EXPECT_THROW(render_line_chart(neg), std::invalid_argument);
}

TEST(HeatMap, CellsColouredByValueAndEscaped) {
  HeatMap h{"bw", "Gbit/s", {"a", "<b>"}, {"a", "<b>"}, {std::nullopt, 10.0, 90.0, std::nullopt},
            40};
  std::string svg = render_heat_map(h);
  EXPECT_EQ(count(svg, "class=\"cell\""), 4);
  EXPECT_NE(svg.find("data-row=\"a\" data-col=\"&lt;b&gt;\""), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_EQ(heat_color(10, 10, 90), "#d73027");  // lowest red
  EXPECT_EQ(heat_color(90, 10, 90), "#1a9850");  // highest green
  EXPECT_EQ(heat_color(50, 10, 90), "#fee08b");  // middle yellow
  EXPECT_NE(svg.find("fill=\"#d73027\""), std::string::npos);
  EXPECT_NE(svg.find("fill=\"#1a9850\""), std::string::npos);
  EXPECT_EQ(count(svg, "fill=\"#dddddd\""), 2);  // unmeasured
  EXPECT_NE(svg.find(">lowest 10</text>"), std::string::npos);  // the colour scale
  EXPECT_NE(svg.find(">highest 90</text>"), std::string::npos);
  EXPECT_NE(svg.find("text-anchor=\"middle\">90</text>"), std::string::npos);  // value printed
  h.cell = 20;  // too small to print a value: only the tooltip keeps it
  std::string small = render_heat_map(h);
  EXPECT_EQ(small.find("text-anchor=\"middle\">90</text>"), std::string::npos);
  EXPECT_NE(small.find("&lt;b&gt; ↔ a: 90 Gbit/s"), std::string::npos);
  h.values.pop_back();
  EXPECT_THROW(render_heat_map(h), std::invalid_argument);
}

TEST(Escape, XmlSpecials) { EXPECT_EQ(xml_escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;"); }

}  // namespace
}  // namespace fabkit::reports::chart
