#include "reports/baseline/gpu_active_baseline.h"

#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

#include "reports/json/member.h"
#include "reports/text/table.h"

namespace fabkit::reports::baseline {
namespace {

struct Figure {
  std::string unit;
  std::optional<double> value;
};
using Figures = std::map<std::pair<std::string, std::string>, Figure>;  // (subject, figure)

std::optional<double> number(const Json& j, const char* key, const std::string& where) {
  const Json& v = member(j, key);
  if (v.is_null()) return std::nullopt;
  if (!v.is_number())
    throw std::invalid_argument(where + "." + key + " must be a number, got " + v.dump());
  return v.get<double>();
}

std::string string_of(const Json& j, const char* key) {
  const Json& v = member(j, key);
  return v.is_string() ? v.get<std::string>() : "";
}

const Json& array_of(const Json& j, const char* key, const std::string& where) {
  static const Json empty = Json::array();
  const Json& v = member(j, key);
  if (v.is_null()) return empty;
  if (!v.is_array()) throw std::invalid_argument(where + "." + key + " must be an array");
  return v;
}

// A GPU is the same GPU across runs by its bus id (CUDA indexes follow CUDA_VISIBLE_DEVICES).
Figures figures_of(const Json& doc, const std::string& which) {
  Figures out;
  const Json& s = member(doc, "gpu_active");
  if (!s.is_object()) return out;
  std::string where = which + ": gpu_active";
  const Json& gpus = array_of(s, "gpus", where);
  for (size_t i = 0; i < gpus.size(); ++i) {
    std::string w = where + ".gpus[" + std::to_string(i) + "]";
    std::string bus = string_of(gpus[i], "bus_id");
    auto index = number(gpus[i], "index", w);
    std::string subject =
        "GPU " + (bus.empty() ? (index ? std::to_string(static_cast<int>(*index)) : "?") : bus);
    const Json& figs = array_of(gpus[i], "figures", w);
    for (size_t k = 0; k < figs.size(); ++k)
      out[{subject, string_of(figs[k], "name")}] = {
          string_of(figs[k], "unit"),
          number(figs[k], "measured", w + ".figures[" + std::to_string(k) + "]")};
  }
  const Json& runs = array_of(s, "allreduce", where);
  for (size_t i = 0; i < runs.size(); ++i)
    out[{"all-reduce " + string_of(runs[i], "algorithm"), "busbw"}] = {
        "GB/s", number(runs[i], "busbw_gb_per_s", where + ".allreduce[" + std::to_string(i) + "]")};
  return out;
}

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

}  // namespace

GpuActiveBaseline compare_gpu_active(const Json& old_doc, const Json& new_doc) {
  GpuActiveBaseline b;
  b.present =
      member(old_doc, "gpu_active").is_object() || member(new_doc, "gpu_active").is_object();
  Figures olds = figures_of(old_doc, "old"), news = figures_of(new_doc, "new");
  std::map<std::pair<std::string, std::string>, GpuActiveRow> rows;
  for (const auto& [k, f] : olds) rows[k] = {k.first, k.second, f.unit, f.value, std::nullopt};
  for (const auto& [k, f] : news) {
    auto& row = rows[k];
    row.subject = k.first;
    row.figure = k.second;
    row.unit = f.unit;
    row.new_value = f.value;
  }
  for (auto& [k, row] : rows) {
    b.rows.push_back(row);
    if (!row.old_value || *row.old_value <= 0) continue;
    if (!row.new_value) {
      b.findings.push_back(
          warn("baseline.gpu_active_missing", row.subject,
               row.figure + " was " + fmt(*row.old_value) + " " + row.unit +
                   " in the baseline and has no figure now",
               "the new report's gpu_active.* findings say why (check not run with --active, "
               "a step failed, the GPU is gone); nvidia-smi -L"));
      continue;
    }
    double drop_pct = (1 - *row.new_value / *row.old_value) * 100;
    if (drop_pct > kGpuActiveDropPct)
      b.findings.push_back(
          fail("baseline.gpu_active_dropped", row.subject,
               row.figure + " " + fmt(*row.old_value) + " → " + fmt(*row.new_value) + " " +
                   row.unit + " (" + fmt(-drop_pct) + "%) since the baseline",
               "fabcheck node --active again on an idle node; the new report's gpu_active.* "
               "findings (clocks, PCIe link, NVLink); nvidia-smi -q -d PERFORMANCE"));
  }
  return b;
}

Json gpu_active_baseline_json(const GpuActiveBaseline& b) {
  auto opt = [](const std::optional<double>& v) { return v ? Json(*v) : Json(); };
  Json rows = Json::array();
  for (const auto& r : b.rows)
    rows.push_back({{"subject", r.subject},
                    {"figure", r.figure},
                    {"unit", r.unit},
                    {"old", opt(r.old_value)},
                    {"new", opt(r.new_value)}});
  return rows;
}

std::string gpu_active_baseline_text(const GpuActiveBaseline& b) {
  if (!b.present) return "";
  std::string out = "Active GPU check, baseline vs new\n";
  if (b.rows.empty()) return out + "  (no figures in either report)\n";
  auto v = [](const std::optional<double>& x) { return x ? fmt(*x) : std::string("-"); };
  text::Table t({{"subject"},
                 {"figure"},
                 {"old", text::Align::kRight},
                 {"new", text::Align::kRight},
                 {"unit"}});
  for (const auto& r : b.rows)
    t.add_row({r.subject, r.figure, v(r.old_value), v(r.new_value), r.unit});
  std::ostringstream o;
  t.render(o);
  return out + o.str();
}

}  // namespace fabkit::reports::baseline
