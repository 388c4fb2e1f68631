#include "reports/chart/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace fabkit::reports::chart {

const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd",
                                "#8c564b", "#e377c2", "#17becf", "#7f7f7f"};
const int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

Scale::Scale(double d0, double d1, double px0, double px1, bool log)
    : d0_(d0), d1_(d1), px0_(px0), px1_(px1), log_(log) {
  if (!(d1 > d0) || !std::isfinite(d0) || !std::isfinite(d1))
    throw std::invalid_argument("chart scale: empty or non-finite domain [" + format_number(d0) +
                                ", " + format_number(d1) + "]");
  if (log && d0 <= 0)
    throw std::invalid_argument("chart scale: a log axis needs positive values, got " +
                                format_number(d0));
}

Scale Scale::linear(double d0, double d1, double px0, double px1) {
  return Scale(d0, d1, px0, px1, false);
}
Scale Scale::log10(double d0, double d1, double px0, double px1) {
  return Scale(d0, d1, px0, px1, true);
}

double Scale::map(double v) const {
  double t = log_ ? (std::log10(v) - std::log10(d0_)) / (std::log10(d1_) - std::log10(d0_))
                  : (v - d0_) / (d1_ - d0_);
  return px0_ + t * (px1_ - px0_);
}

std::vector<double> linear_ticks(double lo, double hi, int count) {
  if (!(hi > lo) || count < 1) return {lo};
  double raw = (hi - lo) / count;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  std::vector<double> out;
  // Small epsilon: 0.1 + 0.2-style sums must not drop the last tick.
  for (double t = std::floor(lo / step) * step; t <= hi + step * 1e-9; t += step)
    out.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  if (out.back() < hi) out.push_back(out.back() + step);
  return out;
}

std::vector<double> log_ticks(double lo, double hi, double base) {
  std::vector<double> out;
  if (lo <= 0 || hi < lo || base <= 1) return out;
  double t = std::pow(base, std::floor(std::log(lo) / std::log(base) + 1e-9));
  for (; t <= hi * (1 + 1e-9); t *= base) out.push_back(t);
  return out;
}

std::string format_bytes(double v) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%s", v, units[u]);
  return buf;
}

std::string format_number(double v) {
  char buf[32];
  // Whole thousands read better than 1.2e+04 on a tokens/s axis.
  if (std::fabs(v) >= 1e4 && std::fabs(v) < 1e12)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

PlotArea plot_area(int width, int height) {
  // Room for y tick labels on the left, the legend on the right, x labels below.
  return {70.0, 34.0, width - 170.0, height - 48.0};
}

namespace {

struct Extent {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
};

void check_log(bool log, double v, const char* axis) {
  if (log && !(v > 0))
    throw std::invalid_argument(std::string("chart: log ") + axis + " axis got " +
                                format_number(v) + " (only positive values can be drawn on it)");
}

}  // namespace

std::pair<Scale, Scale> line_chart_scales(const LineChart& c) {
  Extent x, y;
  for (const auto& s : c.series)
    for (const auto& [px_, py] : s.points) {
      check_log(c.log_x, px_, "x");
      check_log(c.log_y, py, "y");
      x.add(px_);
      y.add(py);
    }
  if (x.empty()) throw std::invalid_argument("chart '" + c.title + "': no series has a point");
  for (const auto& l : c.lines) y.add(l.y);
  for (const auto& b : c.bands) {
    y.add(b.y_lo);
    y.add(b.y_hi);
  }
  PlotArea a = plot_area(c.width, c.height);
  auto domain = [](Extent e, bool log) {
    if (log) {
      double lo = std::pow(10.0, std::floor(std::log10(e.lo)));
      double hi = std::pow(10.0, std::ceil(std::log10(e.hi)));
      if (hi <= lo) hi = lo * 10;
      return std::make_pair(lo, hi);
    }
    double lo = std::min(0.0, e.lo), hi = e.hi;
    if (hi <= lo) hi = lo + 1;
    auto t = linear_ticks(lo, hi, 5);
    return std::make_pair(t.front(), t.back());
  };
  auto [x0, x1] = c.log_x ? std::make_pair(x.lo, x.hi == x.lo ? x.lo * 2 : x.hi) : domain(x, false);
  auto [y0, y1] = domain(y, c.log_y);
  Scale sx =
      c.log_x ? Scale::log10(x0, x1, a.left, a.right) : Scale::linear(x0, x1, a.left, a.right);
  Scale sy =
      c.log_y ? Scale::log10(y0, y1, a.bottom, a.top) : Scale::linear(y0, y1, a.bottom, a.top);
  return {sx, sy};
}

std::string render_line_chart(const LineChart& c) {
  auto [sx, sy] = line_chart_scales(c);
  PlotArea a = plot_area(c.width, c.height);
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"" << c.width
    << "\" height=\"" << c.height << "\" viewBox=\"0 0 " << c.width << " " << c.height
    << "\" role=\"img\" aria-label=\"" << xml_escape(c.title) << "\">\n";
  o << "<rect x=\"0\" y=\"0\" width=\"" << c.width << "\" height=\"" << c.height
    << "\" fill=\"#ffffff\"/>\n";
  o << "<text class=\"title\" x=\"" << px(a.left) << "\" y=\"20\" font-size=\"14\" "
    << "font-weight=\"bold\">" << xml_escape(c.title) << "</text>\n";
  // Bands first, so lines and points draw over them.
  for (const auto& b : c.bands) {
    double y_top = sy.map(b.y_hi), y_bot = sy.map(b.y_lo);
    o << "<rect class=\"band\" data-name=\"" << xml_escape(b.name) << "\" x=\"" << px(a.left)
      << "\" y=\"" << px(y_top) << "\" width=\"" << px(a.right - a.left) << "\" height=\""
      << px(y_bot - y_top) << "\" fill=\"" << b.color << "\" fill-opacity=\"0.18\"/>\n";
  }
  // Axes and ticks.
  std::vector<double> xt = sx.is_log() ? log_ticks(sx.d0(), sx.d1(), c.x_bytes ? 4 : 10)
                                       : linear_ticks(sx.d0(), sx.d1(), 6);
  std::vector<double> yt =
      sy.is_log() ? log_ticks(sy.d0(), sy.d1(), 10) : linear_ticks(sy.d0(), sy.d1(), 5);
  for (double t : xt) {
    if (t < sx.d0() * (1 - 1e-9) || t > sx.d1() * (1 + 1e-9)) continue;
    double x = sx.map(t);
    o << "<line class=\"grid\" x1=\"" << px(x) << "\" y1=\"" << px(a.top) << "\" x2=\"" << px(x)
      << "\" y2=\"" << px(a.bottom) << "\" stroke=\"#e5e5e5\"/>"
      << "<text class=\"xtick\" x=\"" << px(x) << "\" y=\"" << px(a.bottom + 16)
      << "\" font-size=\"11\" text-anchor=\"middle\">"
      << xml_escape(c.x_bytes ? format_bytes(t) : format_number(t)) << "</text>\n";
  }
  for (double t : yt) {
    if (t < sy.d0() - 1e-12 || t > sy.d1() * (1 + 1e-9)) continue;
    double y = sy.map(t);
    o << "<line class=\"grid\" x1=\"" << px(a.left) << "\" y1=\"" << px(y) << "\" x2=\""
      << px(a.right) << "\" y2=\"" << px(y) << "\" stroke=\"#e5e5e5\"/>"
      << "<text class=\"ytick\" x=\"" << px(a.left - 6) << "\" y=\"" << px(y + 4)
      << "\" font-size=\"11\" text-anchor=\"end\">" << xml_escape(format_number(t)) << "</text>\n";
  }
  o << "<path class=\"axis\" d=\"M" << px(a.left) << " " << px(a.top) << " V" << px(a.bottom)
    << " H" << px(a.right) << "\" fill=\"none\" stroke=\"#333333\"/>\n";
  o << "<text class=\"xlabel\" x=\"" << px((a.left + a.right) / 2) << "\" y=\"" << px(c.height - 8)
    << "\" font-size=\"12\" text-anchor=\"middle\">" << xml_escape(c.x_label) << "</text>\n";
  o << "<text class=\"ylabel\" transform=\"translate(16 " << px((a.top + a.bottom) / 2)
    << ") rotate(-90)\" font-size=\"12\" text-anchor=\"middle\">" << xml_escape(c.y_label)
    << "</text>\n";
  for (const auto& l : c.lines) {
    double y = sy.map(l.y);
    o << "<line class=\"refline\" data-name=\"" << xml_escape(l.name) << "\" x1=\"" << px(a.left)
      << "\" y1=\"" << px(y) << "\" x2=\"" << px(a.right) << "\" y2=\"" << px(y) << "\" stroke=\""
      << l.color << "\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n";
  }
  // Series: a polyline and a circle per point with its value as a tooltip.
  int next = 0;
  std::vector<std::string> colors;
  for (const auto& s : c.series) {
    std::string color = s.color.empty() ? kPalette[next++ % kPaletteSize] : s.color;
    colors.push_back(color);
    o << "<g class=\"series\" data-name=\"" << xml_escape(s.name) << "\">";
    o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\""
      << (s.dashed ? " stroke-dasharray=\"4 3\"" : "") << " points=\"";
    for (size_t i = 0; i < s.points.size(); ++i)
      o << (i ? " " : "") << px(sx.map(s.points[i].first)) << "," << px(sy.map(s.points[i].second));
    o << "\"/>\n";
    for (const auto& [x, y] : s.points)
      o << "<circle cx=\"" << px(sx.map(x)) << "\" cy=\"" << px(sy.map(y)) << "\" r=\"3\" fill=\""
        << color << "\"><title>" << xml_escape(s.name) << ": "
        << xml_escape(c.x_bytes ? format_bytes(x) : format_number(x)) << " → " << format_number(y)
        << "</title></circle>\n";
    o << "</g>\n";
  }
  // Legend: series, then reference lines and bands.
  double ly = a.top + 4;
  auto legend = [&](const std::string& name, const std::string& color, const char* shape) {
    o << "<g class=\"legend\"><" << shape << " x=\"" << px(a.right + 12) << "\" y=\"" << px(ly)
      << "\" width=\"14\" height=\"10\" fill=\"" << color << "\"/><text x=\"" << px(a.right + 30)
      << "\" y=\"" << px(ly + 9) << "\" font-size=\"11\">" << xml_escape(name) << "</text></g>\n";
    ly += 18;
  };
  for (size_t i = 0; i < c.series.size(); ++i) legend(c.series[i].name, colors[i], "rect");
  for (const auto& l : c.lines) legend(l.name, l.color, "rect");
  for (const auto& b : c.bands) legend(b.name, b.color, "rect");
  o << "</svg>\n";
  return o.str();
}

std::string heat_color(double v, double lo, double hi) {
  double t = hi > lo ? std::clamp((v - lo) / (hi - lo), 0.0, 1.0) : 1.0;
  // red (#d73027) -> yellow (#fee08b) -> green (#1a9850): readable for the common question
  // "which pair is slow" without a colour-blind-hostile red/green-only ramp.
  const double c0[3] = {0xd7, 0x30, 0x27}, c1[3] = {0xfe, 0xe0, 0x8b}, c2[3] = {0x1a, 0x98, 0x50};
  const double* a = t < 0.5 ? c0 : c1;
  const double* b = t < 0.5 ? c1 : c2;
  double u = t < 0.5 ? t * 2 : (t - 0.5) * 2;
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x",
                static_cast<int>(std::lround(a[0] + (b[0] - a[0]) * u)),
                static_cast<int>(std::lround(a[1] + (b[1] - a[1]) * u)),
                static_cast<int>(std::lround(a[2] + (b[2] - a[2]) * u)));
  return buf;
}

std::string render_heat_map(const HeatMap& h) {
  if (h.values.size() != h.rows.size() * h.cols.size())
    throw std::invalid_argument("heat map '" + h.title + "': " + std::to_string(h.values.size()) +
                                " values for " + std::to_string(h.rows.size()) + " x " +
                                std::to_string(h.cols.size()) + " cells");
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& v : h.values)
    if (v) {
      lo = std::min(lo, *v);
      hi = std::max(hi, *v);
    }
  const double left = 130, top = 40 + 100;  // room for row names and rotated column names
  int width = static_cast<int>(left + h.cols.size() * h.cell + 20);
  int height = static_cast<int>(top + h.rows.size() * h.cell + 20);
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"heatmap\" width=\"" << width
    << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " " << height
    << "\" role=\"img\" aria-label=\"" << xml_escape(h.title) << "\">\n";
  o << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height
    << "\" fill=\"#ffffff\"/>\n";
  o << "<text class=\"title\" x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">"
    << xml_escape(h.title) << " (" << xml_escape(h.unit) << ")</text>\n";
  if (lo <= hi) {  // the colour scale, so a reader need not guess what red means
    o << "<g class=\"scale\"><rect x=\"10\" y=\"30\" width=\"12\" height=\"12\" fill=\""
      << heat_color(lo, lo, hi) << "\"/><text x=\"26\" y=\"40\" font-size=\"11\">lowest "
      << format_number(lo) << "</text><rect x=\"110\" y=\"30\" width=\"12\" height=\"12\" fill=\""
      << heat_color(hi, lo, hi) << "\"/><text x=\"126\" y=\"40\" font-size=\"11\">highest "
      << format_number(hi) << "</text></g>\n";
  }
  for (size_t c = 0; c < h.cols.size(); ++c)
    o << "<text class=\"col\" transform=\"translate(" << px(left + (c + 0.5) * h.cell) << " "
      << px(top - 6) << ") rotate(-60)\" font-size=\"11\">" << xml_escape(h.cols[c]) << "</text>\n";
  for (size_t r = 0; r < h.rows.size(); ++r) {
    o << "<text class=\"row\" x=\"" << px(left - 6) << "\" y=\"" << px(top + (r + 0.5) * h.cell + 4)
      << "\" font-size=\"11\" text-anchor=\"end\">" << xml_escape(h.rows[r]) << "</text>\n";
    for (size_t c = 0; c < h.cols.size(); ++c) {
      const auto& v = h.values[r * h.cols.size() + c];
      double x = left + c * h.cell, y = top + r * h.cell;
      o << "<rect class=\"cell\" data-row=\"" << xml_escape(h.rows[r]) << "\" data-col=\""
        << xml_escape(h.cols[c]) << "\" x=\"" << px(x) << "\" y=\"" << px(y) << "\" width=\""
        << h.cell - 2 << "\" height=\"" << h.cell - 2 << "\" fill=\""
        << (v ? heat_color(*v, lo, hi) : std::string("#dddddd")) << "\"><title>"
        << xml_escape(h.rows[r]) << " ↔ " << xml_escape(h.cols[c]) << ": "
        << (v ? format_number(*v) + " " + xml_escape(h.unit) : std::string("not measured"))
        << "</title></rect>";
      if (v && h.cell >= 30)  // below that the figure does not fit; the tooltip still has it
        o << "<text x=\"" << px(x + h.cell / 2.0 - 1) << "\" y=\"" << px(y + h.cell / 2.0 + 3)
          << "\" font-size=\"10\" text-anchor=\"middle\">" << format_number(*v) << "</text>";
      o << "\n";
    }
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace fabkit::reports::chart
