// fabtrain runs: loss and tokens/s per step from metrics.jsonl (docs/fabtrain.md).
#include <sstream>
#include <stdexcept>

#include "reports/chart/svg_chart.h"
#include "reports/html/html_report.h"

namespace fabkit::reports::html {

std::string metrics_section(const std::vector<Json>& records) {
  chart::Series loss{"train loss", {}, "", false}, valid{"valid loss", {}, "", true};
  chart::Series tps{"tokens/s", {}, "", false};
  std::optional<double> total;
  for (size_t i = 0; i < records.size(); ++i) {
    std::string w = "metrics line " + std::to_string(i + 1);
    auto step = opt_number(records[i], "step", w);
    if (!step) throw std::invalid_argument(w + ": no 'step'");
    if (auto v = opt_number(records[i], "loss", w)) loss.points.push_back({*step, *v});
    if (auto v = opt_number(records[i], "valid_loss", w)) valid.points.push_back({*step, *v});
    if (auto v = opt_number(records[i], "tokens_per_s", w)) tps.points.push_back({*step, *v});
    if (auto v = opt_number(records[i], "total_steps", w)) total = v;
  }
  std::ostringstream o;
  o << "<p>" << records.size() << " records; " << loss.points.size() << " training steps";
  if (total) o << " of " << chart::format_number(*total) << " planned";
  if (!loss.points.empty()) o << "; last loss " << chart::format_number(loss.points.back().second);
  o << "</p>\n<div class=\"charts train\">\n";
  chart::LineChart lc{
      "loss per step", "step", "loss (nats/token)", false, false, false, {}, {}, {}};
  if (!loss.points.empty()) lc.series.push_back(loss);
  if (!valid.points.empty()) lc.series.push_back(valid);
  if (!lc.series.empty()) o << chart::render_line_chart(lc);
  if (!tps.points.empty()) {
    chart::LineChart tc{
        "throughput per step", "step", "tokens/s", false, false, false, {tps}, {}, {}};
    o << chart::render_line_chart(tc);
  }
  o << "</div>\n";
  if (lc.series.empty() && tps.points.empty())
    o << "<p>no loss or tokens_per_s in the records</p>\n";
  return o.str();
}

}  // namespace fabkit::reports::html
