// SVG charts drawn by fabkit itself, so an HTML report needs no JavaScript library and no network:
// scales (linear, log), nice ticks, line charts with reference lines and bands, heat maps.
// Every figure is emitted with fixed precision, so tests can compute where a known value must land.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fabkit::reports::chart {

// Maps a data interval onto a pixel interval; log scales map log10(v). Throws
// std::invalid_argument for an empty or (log) non-positive domain.
class Scale {
 public:
  static Scale linear(double d0, double d1, double px0, double px1);
  static Scale log10(double d0, double d1, double px0, double px1);
  double map(double v) const;
  bool is_log() const { return log_; }
  double d0() const { return d0_; }
  double d1() const { return d1_; }

 private:
  Scale(double d0, double d1, double px0, double px1, bool log);
  double d0_, d1_, px0_, px1_;
  bool log_;
};

// 1-2-5 steps covering [lo, hi] with about `count` ticks (the first at or below lo).
std::vector<double> linear_ticks(double lo, double hi, int count);
// Powers of `base` within [lo, hi] (message sizes read best as powers of 4 or 2).
std::vector<double> log_ticks(double lo, double hi, double base);
// Tick labels: "1K", "64M" for byte counts (binary), "0.5", "12" otherwise.
std::string format_bytes(double v);
std::string format_number(double v);
std::string xml_escape(const std::string& s);
// Fixed two-decimal coordinates, as written into every attribute.
std::string px(double v);

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y) in data units
  std::string color;                              // empty: the palette's next colour
  bool dashed = false;
};
struct RefLine {  // horizontal: a limit such as the link rate
  std::string name;
  double y = 0;
  std::string color = "#c0392b";
};
struct Band {  // horizontal: a range such as the expected-performance band
  std::string name;
  double y_lo = 0, y_hi = 0;
  std::string color = "#27ae60";
};

struct LineChart {
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;
  bool x_bytes = false;  // x tick labels as binary sizes (1K, 1M)
  std::vector<Series> series;
  std::vector<RefLine> lines;
  std::vector<Band> bands;
  int width = 720, height = 360;
};

// The plot area inside the SVG, in pixels; charts and tests derive scales from it.
struct PlotArea {
  double left, top, right, bottom;
};
PlotArea plot_area(int width, int height);

// The scales render_line_chart uses for this chart (data extents padded to ticks; y from 0 on a
// linear axis so bandwidths are not exaggerated). Throws std::invalid_argument when no series has
// a point, or a log axis meets a non-positive value (named).
std::pair<Scale, Scale> line_chart_scales(const LineChart& c);
std::string render_line_chart(const LineChart& c);

struct HeatMap {
  std::string title, unit;
  std::vector<std::string> rows, cols;
  std::vector<std::optional<double>>
      values;  // row-major, rows.size() * cols.size(); nullopt = none
  int cell = 44;
};
// Cells coloured from red (lowest) through yellow to green (highest), value printed in each; empty
// cells grey. Throws std::invalid_argument when values does not match rows x cols.
std::string render_heat_map(const HeatMap& h);
// The colour of value v on [lo, hi] (hi == lo: green): "#rrggbb".
std::string heat_color(double v, double lo, double hi);

extern const char* const kPalette[];
extern const int kPaletteSize;

}  // namespace fabkit::reports::chart
