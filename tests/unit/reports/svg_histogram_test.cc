// reports/chart/svg_histogram: bars and marks land where the scales put them, every sample is in a
// bar's data-count or the overflow, and bad input is refused by name.
#include "reports/chart/svg_histogram.h"

#include <gtest/gtest.h>

#include <regex>
#include <stdexcept>

namespace fabkit::reports::chart {
namespace {

std::vector<std::smatch> all(const std::string& s, const std::regex& re) {
  std::vector<std::smatch> out;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back(*it);
  return out;
}

Histogram two_bars() {
  Histogram h;
  h.title = "round trip eth0 → eth0";
  h.bars = {{16, 32, 10}, {32, 64, 30}, {64, 128, 0}, {128, 256, 2}};
  h.marks = {{"median 40 µs", 40, "#c0392b", false}, {"p99 200 µs", 200, "#e67e22", true}};
  h.overflow = 3;
  return h;
}

TEST(SvgHistogram, ScalesSpanTheBarsOnDecadesAndTheTallestBar) {
  auto [sx, sy] = histogram_scales(two_bars());
  EXPECT_TRUE(sx.is_log());
  EXPECT_DOUBLE_EQ(sx.d0(), 10);
  EXPECT_DOUBLE_EQ(sx.d1(), 1000);
  EXPECT_DOUBLE_EQ(sy.d0(), 0);
  EXPECT_GE(sy.d1(), 30);
  EXPECT_LT(sy.d1(), 45);
}

TEST(SvgHistogram, BarsAndMarksWhereTheScalesSay) {
  Histogram h = two_bars();
  auto [sx, sy] = histogram_scales(h);
  PlotArea a = plot_area(h.width, h.height);
  std::string svg = render_histogram(h);
  auto bars =
      all(svg,
          std::regex(
              "<rect class=\"bar\" data-lo=\"([^\"]+)\" data-hi=\"([^\"]+)\" data-count=\"(\\d+)\" "
              "x=\"([^\"]+)\" y=\"([^\"]+)\" width=\"([^\"]+)\" height=\"([^\"]+)\""));
  ASSERT_EQ(bars.size(), 3u);  // the empty bucket draws nothing
  EXPECT_EQ(bars[1][1], "32");
  EXPECT_EQ(bars[1][3], "30");
  EXPECT_EQ(bars[1][4].str(), px(sx.map(32)));
  EXPECT_EQ(bars[1][5].str(), px(sy.map(30)));
  EXPECT_EQ(bars[1][6].str(), px(sx.map(64) - sx.map(32)));
  EXPECT_EQ(bars[1][7].str(), px(a.bottom - sy.map(30)));
  uint64_t sum = 0;
  for (const auto& b : bars) sum += std::stoull(b[3]);
  EXPECT_EQ(sum, 42u);
  EXPECT_NE(svg.find("data-samples=\"45\" data-overflow=\"3\""), std::string::npos);
  EXPECT_NE(svg.find("3 beyond 256 (not drawn)"), std::string::npos);
  auto marks = all(
      svg, std::regex(
               "<line class=\"mark\" data-name=\"([^\"]+)\" data-x=\"([^\"]+)\" x1=\"([^\"]+)\""));
  ASSERT_EQ(marks.size(), 2u);
  EXPECT_EQ(marks[0][1], "median 40 µs");
  EXPECT_EQ(marks[0][3].str(), px(sx.map(40)));
  EXPECT_EQ(marks[1][3].str(), px(sx.map(200)));
  EXPECT_NE(svg.find("stroke-dasharray=\"6 4\""), std::string::npos);  // p99 dashed
  EXPECT_NE(svg.find("aria-label=\"round trip eth0 → eth0\""), std::string::npos);
}

TEST(SvgHistogram, TheBucketFromZeroIsDrawnFromHalfItsUpperEdge) {
  Histogram h;
  h.title = "t";
  h.bars = {{0, 1, 5}, {1, 1.0905, 1}};
  auto [sx, sy] = histogram_scales(h);
  EXPECT_DOUBLE_EQ(sx.d0(), 0.1);
  std::string svg = render_histogram(h);
  EXPECT_NE(svg.find("data-lo=\"0\" data-hi=\"1\" data-count=\"5\" x=\"" + px(sx.map(0.5)) + "\""),
            std::string::npos);
}

TEST(SvgHistogram, RefusesBarsThatAreNotAHistogram) {
  Histogram h;
  h.title = "t";
  EXPECT_THROW(render_histogram(h), std::invalid_argument);  // no bar
  h.bars = {{10, 20, 0}};
  EXPECT_THROW(render_histogram(h), std::invalid_argument);  // no sample
  h.bars = {{20, 10, 1}};
  EXPECT_THROW(render_histogram(h), std::invalid_argument);  // empty interval
  h.bars = {{10, 20, 1}, {15, 30, 1}};
  try {
    render_histogram(h);
    FAIL() << "overlapping bars accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "histogram 't': bar 1 starts at 15, before the previous bar ends (20)"),
              std::string::npos);
  }
}

TEST(SvgHistogram, LatencyBarsAreTheNonEmptyBuckets) {
  LatencyHistogram lh;
  for (double us : {20.0, 20.5, 80.0, 3e6}) lh.add(us);
  auto bars = latency_bars(lh);
  ASSERT_EQ(bars.size(), 2u);
  EXPECT_EQ(bars[0].count, 2u);
  EXPECT_DOUBLE_EQ(bars[0].lo, LatencyHistogram::lower_edge(LatencyHistogram::bucket_of(20)));
  EXPECT_DOUBLE_EQ(bars[0].hi, LatencyHistogram::lower_edge(LatencyHistogram::bucket_of(20) + 1));
  EXPECT_EQ(bars[1].count, 1u);  // the overflow sample is not a bar
}

}  // namespace
}  // namespace fabkit::reports::chart
