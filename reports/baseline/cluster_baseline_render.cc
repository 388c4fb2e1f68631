// The cluster baseline as JSON (docs/json/cluster.md, "cluster_baseline") and as aligned text.
#include <algorithm>
#include <cstdio>

#include "reports/baseline/cluster_baseline.h"

namespace fabkit::reports::baseline {
namespace {

Json opt(const std::optional<double>& v) { return v ? Json(*v) : Json(); }
Json opt(const std::string& s) { return s.empty() ? Json() : Json(s); }

std::string num(const std::optional<double>& v, const char* f = "%.3f") {
  if (!v) return "-";
  char b[32];
  std::snprintf(b, sizeof b, f, *v);
  return b;
}

std::string pad(const std::string& s, size_t w) {
  // Width in characters, not bytes: host names are ASCII, the dash placeholders too.
  return s.size() >= w ? s : s + std::string(w - s.size(), ' ');
}

std::string rpad(const std::string& s, size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

}  // namespace

Json cluster_baseline_to_json(const ClusterBaselineResult& r, const ClusterBaselineOptions& o,
                              const std::string& old_path, const std::string& new_path) {
  Json pairs = Json::array(), nodes = Json::array();
  for (const auto& p : r.pairs)
    pairs.push_back({{"a", p.a},
                     {"b", p.b},
                     {"old_state", opt(p.old_state)},
                     {"new_state", opt(p.new_state)},
                     {"old_gbit_s", opt(p.old_gbit_s)},
                     {"new_gbit_s", opt(p.new_gbit_s)},
                     {"change_pct", opt(p.change_pct)},
                     {"old_rtt_us", opt(p.old_rtt_us)},
                     {"new_rtt_us", opt(p.new_rtt_us)},
                     {"old_source", opt(p.old_source)},
                     {"new_source", opt(p.new_source)},
                     {"link_rate_gbit_s", opt(p.link_rate_gbit_s)},
                     {"regressed", p.regressed},
                     {"rtt_regressed", p.rtt_regressed},
                     {"lost", p.lost},
                     {"below_link_rate", p.below_link_rate},
                     {"below_median", p.below_median}});
  for (const auto& n : r.nodes)
    nodes.push_back({{"host", n.host},
                     {"old_check", opt(n.old_check)},
                     {"new_check", opt(n.new_check)},
                     {"old_findings", {{"fail", n.old_fail}, {"warn", n.old_warn}}},
                     {"new_findings", {{"fail", n.new_fail}, {"warn", n.new_warn}}},
                     {"old_slow", n.old_slow},
                     {"new_slow", n.new_slow},
                     {"worse", n.worse}});
  return {{"baseline_version", 1},
          {"old", old_path},
          {"new", new_path},
          {"regression_pct", o.regression_pct},
          {"rtt_regression_pct", o.rtt_regression_pct},
          {"rtt_min_rise_us", o.rtt_min_rise_us},
          {"expect_link_fraction", o.expect_link_fraction},
          {"expect_median_pct", o.expect_median_pct},
          {"median_gbit_s", opt(r.median_gbit_s)},
          {"pairs", pairs},
          {"nodes", nodes}};
}

std::string cluster_baseline_table_text(const ClusterBaselineResult& r,
                                        const ClusterBaselineOptions& o) {
  size_t w = 4;  // "pair"
  for (const auto& p : r.pairs) w = std::max(w, p.a.size() + 3 + p.b.size());
  for (const auto& n : r.nodes) w = std::max(w, n.host.size());
  char fig[128];
  std::snprintf(fig, sizeof fig, "regression beyond %g%%, RTT beyond +%g%% and +%g µs",
                o.regression_pct, o.rtt_regression_pct, o.rtt_min_rise_us);
  std::string out =
      "cluster pairs, baseline vs new (Gbit/s; median RTT in µs); " + std::string(fig) + "\n";
  out += "  " + pad("pair", w) + rpad("baseline", 10) + rpad("new", 10) + rpad("change", 9) +
         rpad("RTT old", 9) + rpad("RTT new", 9) + "  state\n";
  for (const auto& p : r.pairs) {
    std::string state = (p.old_state.empty() ? "-" : p.old_state) + " → " +
                        (p.new_state.empty() ? "-" : p.new_state);
    std::string flags = std::string(p.regressed ? "  REGRESSED" : "") + (p.lost ? "  LOST" : "") +
                        (p.rtt_regressed ? "  RTT UP" : "");
    out += "  " + pad(p.a + "<->" + p.b, w) + rpad(num(p.old_gbit_s), 10) +
           rpad(num(p.new_gbit_s), 10) +
           rpad(p.change_pct ? num(p.change_pct, "%+.1f") + "%" : "-", 9) +
           rpad(num(p.old_rtt_us, "%.1f"), 9) + rpad(num(p.new_rtt_us, "%.1f"), 9) + "  " + state +
           flags + "\n";
  }
  if (r.pairs.empty()) out += "  (no pairs in either report)\n";

  int rated = 0, measured = 0;
  for (const auto& p : r.pairs) {
    measured += p.new_gbit_s.has_value();
    rated += p.new_gbit_s && p.link_rate_gbit_s;
  }
  char line[256];
  std::string rate_check = "link rate check off", median_check = "median check off";
  if (o.expect_link_fraction > 0) {
    std::snprintf(line, sizeof line,
                  "≥ %.0f%% of the link rate (known for %d of %d measured pairs)",
                  o.expect_link_fraction * 100, rated, measured);
    rate_check = line;
  }
  if (o.expect_median_pct > 0) {
    std::snprintf(line, sizeof line, "within %g%% of the run's median (%s)", o.expect_median_pct,
                  r.median_gbit_s ? (num(r.median_gbit_s, "%.3g") + " Gbit/s").c_str()
                                  : "none: under 3 measured pairs");
    median_check = line;
  }
  out += "expected: " + rate_check + "; " + median_check + "\n";
  int below = 0;
  for (const auto& p : r.pairs) {
    if (!p.below_link_rate && !p.below_median) continue;
    ++below;
    std::string why;
    if (p.below_link_rate)
      why += "  " + num(*p.new_gbit_s / *p.link_rate_gbit_s * 100, "%.0f") + "% of " +
             num(p.link_rate_gbit_s, "%g") + " Gbit/s link rate";
    if (p.below_median)
      why += "  " + num(*p.new_gbit_s / *r.median_gbit_s * 100, "%.0f") + "% of the median";
    out += "  " + pad(p.a + "<->" + p.b, w) + rpad(num(p.new_gbit_s), 10) + why + "  BELOW\n";
  }
  if (!below) out += "  no measured pair below them\n";

  out += "nodes, baseline vs new (node check, fail/warn findings, slow)\n";
  for (const auto& n : r.nodes) {
    auto side = [](const std::string& check, int f, int wn, bool slow) {
      if (check.empty()) return std::string("-");
      return check + " " + std::to_string(f) + "/" + std::to_string(wn) + (slow ? " slow" : "");
    };
    std::string row = "  " + pad(n.host, w) + "  " +
                      pad(side(n.old_check, n.old_fail, n.old_warn, n.old_slow), 16) +
                      pad(side(n.new_check, n.new_fail, n.new_warn, n.new_slow), 16) +
                      (n.worse ? "WORSE" : "");
    out += row.substr(0, row.find_last_not_of(' ') + 1) + "\n";
  }
  return out;
}

}  // namespace fabkit::reports::baseline
