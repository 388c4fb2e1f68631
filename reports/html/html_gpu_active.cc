#include "reports/html/html_gpu_active.h"

#include <cstdio>
#include <sstream>

#include "reports/chart/svg_chart.h"
#include "reports/html/html_report.h"

namespace fabkit::reports::html {
namespace {

std::string num(const std::optional<double>& v) { return v ? chart::format_number(*v) : "—"; }

std::string pct(const std::optional<double>& f) {
  if (!f) return "—";
  char b[16];
  std::snprintf(b, sizeof b, "%.0f%%", *f * 100);
  return b;
}

// The judge's verdict as the findings table's row classes, so the same colors apply.
std::string row_class(const std::string& verdict) {
  return verdict == "fail" ? " class=\"sev-fail\"" : verdict == "warn" ? " class=\"sev-warn\"" : "";
}

std::string link(const Json& l, const std::string& where) {
  auto g = opt_number(l, "generation", where);
  auto w = opt_number(l, "width", where);
  if (!g && !w) return "unknown";
  return "Gen" + (g ? chart::format_number(*g) : std::string("?")) + " x" +
         (w ? chart::format_number(*w) : std::string("?"));
}

}  // namespace

std::string gpu_active_section(const Json& s) {
  std::ostringstream o;
  if (!s.is_object()) throw std::invalid_argument("gpu_active must be an object");
  std::string status = opt_string(s, "status", "gpu_active");
  o << "<h3>Active GPU check</h3>\n<p>status: " << escape(status);
  if (auto ms = opt_number(s, "elapsed_ms", "gpu_active"))
    o << ", " << chart::format_number(*ms / 1000) << " s";
  std::string reason = opt_string(s, "reason", "gpu_active");
  if (!reason.empty()) o << " — " << escape(reason);
  o << "</p>\n";
  const Json& gpus = opt_array(s, "gpus", "gpu_active");
  for (size_t i = 0; i < gpus.size(); ++i) {
    std::string w = "gpu_active.gpus[" + std::to_string(i) + "]";
    const Json& g = gpus[i];
    const Json& pcie = g.contains("pcie") && g["pcie"].is_object() ? g["pcie"] : Json::object();
    auto index = opt_number(g, "index", w);
    std::string model = opt_string(g, "sku_label", w);
    o << "<h4>GPU " << (index ? chart::format_number(*index) : "?") << " "
      << escape(opt_string(g, "name", w)) << " <span class=\"src\">"
      << escape(opt_string(g, "bus_id", w)) << "; model "
      << escape(model.empty() ? "unknown" : model) << "; PCIe "
      << escape(link(pcie.value("under_load", Json::object()), w + ".pcie.under_load"))
      << " under load, can train "
      << escape(link(pcie.value("capable", Json::object()), w + ".pcie.capable"))
      << "</span></h4>\n";
    o << "<table "
         "class=\"gpu-active\"><thead><tr><th>figure</th><th>measured</th><th>expected</"
         "th><th>unit</th>"
         "<th>fraction</th><th>basis</th></tr></thead><tbody>\n";
    const Json& figs = opt_array(g, "figures", w);
    for (size_t k = 0; k < figs.size(); ++k) {
      std::string fw = w + ".figures[" + std::to_string(k) + "]";
      const Json& f = figs[k];
      std::string error = opt_string(f, "error", fw);
      if (!error.empty()) {
        o << "<tr class=\"sev-fail\"><td>" << escape(opt_string(f, "name", fw))
          << "</td><td class=\"sev\">error</td>"
          << "<td></td><td></td><td></td><td>" << escape(error) << "</td></tr>\n";
        continue;
      }
      o << "<tr" << row_class(opt_string(f, "verdict", fw)) << "><td>"
        << escape(opt_string(f, "name", fw)) << "</td><td class=\"num\">"
        << num(opt_number(f, "measured", fw)) << "</td><td class=\"num\">"
        << num(opt_number(f, "expected", fw)) << "</td><td>" << escape(opt_string(f, "unit", fw))
        << "</td><td class=\"num sev\">" << pct(opt_number(f, "fraction", fw))
        << "</td><td class=\"src\">" << escape(opt_string(f, "basis", fw)) << "</td></tr>\n";
    }
    o << "</tbody></table>\n";
  }
  const Json& runs = opt_array(s, "allreduce", "gpu_active");
  if (!runs.empty()) {
    o << "<h4>NCCL all-reduce over the node's GPUs</h4>\n<table "
         "class=\"gpu-allreduce\"><thead><tr><th>algorithm"
         "</th><th>status</th><th>ranks</th><th>size</th><th>busbw "
         "(GB/s)</th><th>expected</th><th>fraction</th>"
         "<th>basis or reason</th></tr></thead><tbody>\n";
    for (size_t i = 0; i < runs.size(); ++i) {
      std::string w = "gpu_active.allreduce[" + std::to_string(i) + "]";
      const Json& r = runs[i];
      std::string st = opt_string(r, "status", w);
      auto bytes = opt_number(r, "bytes", w);
      auto ranks = opt_number(r, "ranks", w);
      o << "<tr"
        << (st == "ok" ? row_class(opt_string(r, "verdict", w))
                       : std::string(st == "failed" ? " class=\"sev-fail\"" : ""))
        << "><td>" << escape(opt_string(r, "algorithm", w)) << "</td><td class=\"sev\">"
        << escape(st) << "</td><td class=\"num\">" << num(ranks) << "</td><td class=\"num\">"
        << (bytes ? iec_bytes(*bytes) : "—") << "</td><td class=\"num\">"
        << num(opt_number(r, "busbw_gb_per_s", w)) << "</td><td class=\"num\">"
        << num(opt_number(r, "expected", w)) << "</td><td class=\"num\">"
        << pct(opt_number(r, "fraction", w)) << "</td><td class=\"src\">"
        << escape(st == "ok" ? opt_string(r, "basis", w) : opt_string(r, "reason", w))
        << "</td></tr>\n";
    }
    o << "</tbody></table>\n";
  }
  return o.str();
}

}  // namespace fabkit::reports::html
