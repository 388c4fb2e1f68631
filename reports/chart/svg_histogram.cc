#include "reports/chart/svg_histogram.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace fabkit::reports::chart {
namespace {

double drawn_lo(const HistogramBar& b) { return b.lo > 0 ? b.lo : b.hi / 2; }

// 1-2-5 ticks on a log axis: decades alone leave a 10..100 µs axis with two labels.
std::vector<double> log_ticks_125(double lo, double hi) {
  std::vector<double> out;
  for (double d : log_ticks(lo, hi, 10))
    for (double m : {1.0, 2.0, 5.0})
      if (d * m >= lo * (1 - 1e-9) && d * m <= hi * (1 + 1e-9)) out.push_back(d * m);
  return out;
}

}  // namespace

std::vector<HistogramBar> latency_bars(const LatencyHistogram& h) {
  std::vector<HistogramBar> out;
  for (int b = 0; b < LatencyHistogram::kOverflowBucket; ++b)
    if (h.count(b) > 0)
      out.push_back(
          {LatencyHistogram::lower_edge(b), LatencyHistogram::lower_edge(b + 1), h.count(b)});
  return out;
}

std::pair<Scale, Scale> histogram_scales(const Histogram& h) {
  uint64_t tallest = 0;
  for (size_t i = 0; i < h.bars.size(); ++i) {
    const auto& b = h.bars[i];
    std::string which = "histogram '" + h.title + "': bar " + std::to_string(i);
    if (!(b.hi > b.lo) || b.lo < 0 || !std::isfinite(b.hi))
      throw std::invalid_argument(which + " [" + format_number(b.lo) + ", " + format_number(b.hi) +
                                  ") is not an interval of non-negative values");
    if (i > 0 && b.lo < h.bars[i - 1].hi)
      throw std::invalid_argument(which + " starts at " + format_number(b.lo) +
                                  ", before the previous bar ends (" +
                                  format_number(h.bars[i - 1].hi) + ")");
    tallest = std::max(tallest, b.count);
  }
  if (tallest == 0) throw std::invalid_argument("histogram '" + h.title + "': no bar has a sample");
  double lo = drawn_lo(h.bars.front()), hi = h.bars.back().hi;
  for (const auto& m : h.marks)
    if (m.x > 0) {
      lo = std::min(lo, m.x);
      hi = std::max(hi, m.x);
    }
  double x0 = std::pow(10.0, std::floor(std::log10(lo)));
  double x1 = std::pow(10.0, std::ceil(std::log10(hi)));
  if (x1 <= x0) x1 = x0 * 10;
  auto yt = linear_ticks(0, static_cast<double>(tallest), 4);
  PlotArea a = plot_area(h.width, h.height);
  return {Scale::log10(x0, x1, a.left, a.right), Scale::linear(0, yt.back(), a.bottom, a.top)};
}

std::string render_histogram(const Histogram& h) {
  auto [sx, sy] = histogram_scales(h);
  PlotArea a = plot_area(h.width, h.height);
  uint64_t total = h.overflow;
  for (const auto& b : h.bars) total += b.count;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart histogram\" width=\"" << h.width
    << "\" height=\"" << h.height << "\" viewBox=\"0 0 " << h.width << " " << h.height
    << "\" role=\"img\" aria-label=\"" << xml_escape(h.title) << "\" data-samples=\"" << total
    << "\" data-overflow=\"" << h.overflow << "\">\n";
  o << "<rect x=\"0\" y=\"0\" width=\"" << h.width << "\" height=\"" << h.height
    << "\" fill=\"#ffffff\"/>\n";
  o << "<text class=\"title\" x=\"" << px(a.left)
    << "\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" << xml_escape(h.title) << "</text>\n";
  if (h.overflow > 0)
    o << "<text class=\"overflow\" x=\"" << px(a.right)
      << "\" y=\"20\" font-size=\"11\" text-anchor=\"end\">" << h.overflow << " beyond "
      << format_number(h.bars.empty() ? 0 : h.bars.back().hi) << " (not drawn)</text>\n";
  for (double t : log_ticks_125(sx.d0(), sx.d1())) {
    double x = sx.map(t);
    o << "<line class=\"grid\" x1=\"" << px(x) << "\" y1=\"" << px(a.top) << "\" x2=\"" << px(x)
      << "\" y2=\"" << px(a.bottom) << "\" stroke=\"#e5e5e5\"/><text class=\"xtick\" x=\"" << px(x)
      << "\" y=\"" << px(a.bottom + 16) << "\" font-size=\"11\" text-anchor=\"middle\">"
      << xml_escape(format_number(t)) << "</text>\n";
  }
  for (double t : linear_ticks(sy.d0(), sy.d1(), 4)) {
    double y = sy.map(t);
    o << "<line class=\"grid\" x1=\"" << px(a.left) << "\" y1=\"" << px(y) << "\" x2=\""
      << px(a.right) << "\" y2=\"" << px(y) << "\" stroke=\"#e5e5e5\"/><text class=\"ytick\" x=\""
      << px(a.left - 6) << "\" y=\"" << px(y + 4) << "\" font-size=\"11\" text-anchor=\"end\">"
      << xml_escape(format_number(t)) << "</text>\n";
  }
  for (const auto& b : h.bars) {
    if (b.count == 0) continue;
    double x0 = sx.map(drawn_lo(b)), x1 = sx.map(b.hi), y = sy.map(static_cast<double>(b.count));
    // A tail bucket of one sample among thousands would be under a pixel high: the tail is what a
    // latency histogram is read for, so every non-empty bar is at least 1.5 px (its count is exact
    // in data-count and the tooltip).
    y = std::min(y, a.bottom - 1.5);
    o << "<rect class=\"bar\" data-lo=\"" << format_number(b.lo) << "\" data-hi=\""
      << format_number(b.hi) << "\" data-count=\"" << b.count << "\" x=\"" << px(x0) << "\" y=\""
      << px(y) << "\" width=\"" << px(std::max(x1 - x0, 1.0)) << "\" height=\"" << px(a.bottom - y)
      << "\" fill=\"" << kPalette[0] << "\"><title>" << format_number(b.lo) << "–"
      << format_number(b.hi) << ": " << b.count << "</title></rect>\n";
  }
  o << "<path class=\"axis\" d=\"M" << px(a.left) << " " << px(a.top) << " V" << px(a.bottom)
    << " H" << px(a.right) << "\" fill=\"none\" stroke=\"#333333\"/>\n";
  o << "<text class=\"xlabel\" x=\"" << px((a.left + a.right) / 2) << "\" y=\"" << px(h.height - 8)
    << "\" font-size=\"12\" text-anchor=\"middle\">" << xml_escape(h.x_label) << "</text>\n";
  o << "<text class=\"ylabel\" transform=\"translate(16 " << px((a.top + a.bottom) / 2)
    << ") rotate(-90)\" font-size=\"12\" text-anchor=\"middle\">" << xml_escape(h.y_label)
    << "</text>\n";
  double ly = a.top + 4;
  for (const auto& m : h.marks) {
    if (!(m.x > 0)) continue;  // an unknown figure is not drawn at the axis' edge
    double x = sx.map(m.x);
    o << "<line class=\"mark\" data-name=\"" << xml_escape(m.name) << "\" data-x=\""
      << format_number(m.x) << "\" x1=\"" << px(x) << "\" y1=\"" << px(a.top) << "\" x2=\"" << px(x)
      << "\" y2=\"" << px(a.bottom) << "\" stroke=\"" << m.color << "\" stroke-width=\"1.5\""
      << (m.dashed ? " stroke-dasharray=\"6 4\"" : "") << "/>\n<g class=\"legend\"><rect x=\""
      << px(a.right + 12) << "\" y=\"" << px(ly) << "\" width=\"14\" height=\"10\" fill=\""
      << m.color << "\"/><text x=\"" << px(a.right + 30) << "\" y=\"" << px(ly + 9)
      << "\" font-size=\"11\">" << xml_escape(m.name) << "</text></g>\n";
    ly += 18;
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace fabkit::reports::chart
