// A histogram drawn as SVG by fabkit itself (no script): bars over a log x axis (bucket edges in
// data units, e.g. µs of round trip), sample counts on a linear y axis, and vertical marks such as
// the median and the 99th percentile. Every bar carries its edges and count as data- attributes,
// so a test reading the DOM can add the counts up.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/latency_histogram.h"
#include "reports/chart/svg_chart.h"

namespace fabkit::reports::chart {

struct HistogramBar {
  double lo = 0, hi = 0;  // [lo, hi); lo may be 0 (drawn from hi / 2: a log axis has no 0)
  uint64_t count = 0;
};
struct HistogramMark {  // a vertical line at x, named in the legend
  std::string name;
  double x = 0;
  std::string color = "#c0392b";
  bool dashed = false;
};
struct Histogram {
  std::string title, x_label = "round trip (µs)", y_label = "samples";
  std::vector<HistogramBar> bars;  // ascending, not overlapping
  std::vector<HistogramMark> marks;
  uint64_t overflow = 0;  // samples beyond the last bar: stated under the title, not drawn
  int width = 720, height = 300;
};

// The non-empty buckets of a latency histogram as bars (µs); its overflow count as overflow.
std::vector<HistogramBar> latency_bars(const LatencyHistogram& h);

// x: log10 from the power of ten at or below the first bar (and any mark) to the one at or above
// the last; y: linear from 0 to the tallest bar, padded to a tick. Throws std::invalid_argument
// when there is no bar with a count, or bars are empty intervals, out of order or overlapping.
std::pair<Scale, Scale> histogram_scales(const Histogram& h);
std::string render_histogram(const Histogram& h);

}  // namespace fabkit::reports::chart
