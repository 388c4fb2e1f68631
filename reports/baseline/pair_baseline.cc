#include "reports/baseline/pair_baseline.h"

#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

#include "reports/text/table.h"

namespace fabkit::reports::baseline {
namespace {

using text::Align;
using text::Table;

struct Transport {
  std::string status;
  std::optional<double> peak, rate;
  std::map<uint64_t, double> busbw;  // by bytes
};

std::optional<double> number(const Json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number())
    throw std::invalid_argument(where + "." + key + " must be a number, got " + j[key].dump());
  return j[key].get<double>();
}

std::map<std::string, Transport> transports_of(const Json& doc, const std::string& which) {
  if (!doc.is_object() || doc.value("kind", std::string()) != "pair" || !doc.contains("pair"))
    throw std::invalid_argument(which +
                                ": not a pair report (kind \"pair\" with a \"pair\" section); "
                                "give two fabcheck pair --json outputs");
  const Json& ts = doc["pair"].value("transports", Json());
  if (!ts.is_array()) throw std::invalid_argument(which + ": pair.transports must be an array");
  std::map<std::string, Transport> out;
  for (size_t i = 0; i < ts.size(); ++i) {
    std::string w = which + ": pair.transports[" + std::to_string(i) + "]";
    if (!ts[i].is_object() || !ts[i].contains("transport") || !ts[i]["transport"].is_string())
      throw std::invalid_argument(w + ".transport must be a string");
    Transport t;
    t.status = ts[i].value("status", std::string());
    t.peak = number(ts[i], "peak_busbw_gbps", w);
    t.rate = number(ts[i], "link_rate_gbit_s", w);
    const Json& sizes = ts[i].value("sizes", Json::array());
    for (size_t s = 0; sizes.is_array() && s < sizes.size(); ++s) {
      std::string sw = w + ".sizes[" + std::to_string(s) + "]";
      auto b = number(sizes[s], "bytes", sw);
      auto bw = number(sizes[s], "busbw_gbps", sw);
      if (!b || *b < 1) throw std::invalid_argument(sw + ".bytes must be a positive number");
      if (bw) t.busbw[static_cast<uint64_t>(*b)] = *bw;
    }
    out[ts[i]["transport"].get<std::string>()] = std::move(t);
  }
  return out;
}

std::string fmt(const char* f, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string size_name(uint64_t b) {
  const char* u[] = {"B", "KiB", "MiB", "GiB"};
  int i = 0;
  double v = static_cast<double>(b);
  while (v >= 1024 && i < 3) v /= 1024, ++i;
  return fmt("%g", v) + " " + u[i];
}

}  // namespace

BaselineResult compare_pair_baseline(const Json& old_doc, const Json& new_doc,
                                     const BaselineOptions& o) {
  auto olds = transports_of(old_doc, "old");
  auto news = transports_of(new_doc, "new");
  BaselineResult r;
  for (const auto& [name, ot] : olds) {
    if (ot.status != "ok") continue;
    auto it = news.find(name);
    if (it == news.end() || it->second.status != "ok") {
      r.findings.push_back(fail(
          "baseline.transport_lost", name,
          "ran ok in the baseline but " + (it == news.end()
                                               ? std::string("is missing from the new run")
                                               : "is '" + it->second.status + "' in the new run"),
          "read the new run's pair findings for why; run fabcheck pair again "
          "with --transports " +
              name));
      continue;
    }
    std::string detail;
    int judged = 0, regressed = 0;
    for (const auto& [bytes, old_bw] : ot.busbw) {
      auto nb = it->second.busbw.find(bytes);
      if (nb == it->second.busbw.end()) continue;
      SizeRow row{
          name,  bytes, old_bw, nb->second, old_bw > 0 ? (nb->second / old_bw - 1) * 100 : 0,
          false, false};
      row.judged = bytes >= o.min_bytes && old_bw > 0;
      row.regressed = row.judged && nb->second < old_bw * (1 - o.regression_pct / 100);
      judged += row.judged;
      if (row.regressed) {
        ++regressed;
        detail += (detail.empty() ? "" : "; ") + size_name(bytes) + " " + fmt("%.3g", old_bw) +
                  " → " + fmt("%.3g", nb->second) + " GB/s (" + fmt("%+.1f", row.change_pct) + "%)";
      }
      r.rows.push_back(row);
    }
    if (regressed)
      r.findings.push_back(
          fail("baseline.busbw_regression", name,
               "busbw fell more than " + fmt("%g", o.regression_pct) + "% below the baseline at " +
                   std::to_string(regressed) + " of " + std::to_string(judged) +
                   " judged sizes: " + detail,
               "compare both runs' pair reports (links, rdma_rc, findings) and the "
               "nodes' fabcheck node reports; a slower link or a changed interface "
               "or transport choice shows there"));
  }
  for (const auto& [name, nt] : news)
    if (nt.status == "ok" && !olds.count(name))
      r.findings.push_back(
          info("baseline.transport_new", name, "not in the baseline: nothing to compare"));
  if (o.expect_link_fraction > 0)
    for (const auto& [name, nt] : news) {
      if (nt.status != "ok" || !nt.peak || !nt.rate || *nt.rate <= 0) continue;
      ExpectRow e{name, *nt.peak, *nt.rate, *nt.peak * 8 / *nt.rate, false};
      e.below = e.link_fraction < o.expect_link_fraction;
      if (e.below)
        r.findings.push_back(warn(
            "baseline.below_link_rate", name,
            "peak busbw " + fmt("%.3g", e.peak_busbw_gbps) +
                " GB/s = " + fmt("%.3g", e.peak_busbw_gbps * 8) + " Gbit/s is " +
                fmt("%.0f", e.link_fraction * 100) + "% of the " + fmt("%g", e.link_rate_gbit_s) +
                " Gbit/s link rate; expected ≥ " + fmt("%.0f", o.expect_link_fraction * 100) + "%",
            "check the pair report's transport choice and the ports' rate and "
            "error counters (fabcheck node); --expect-link-fraction 0 turns this "
            "check off for transports that cannot reach the link rate"));
      r.expected.push_back(e);
    }
  return r;
}

Json baseline_to_json(const BaselineResult& r, const BaselineOptions& o,
                      const std::string& old_path, const std::string& new_path) {
  Json rows = Json::array(), exp = Json::array();
  for (const auto& s : r.rows)
    rows.push_back({{"transport", s.transport},
                    {"bytes", s.bytes},
                    {"old_busbw_gbps", s.old_busbw_gbps},
                    {"new_busbw_gbps", s.new_busbw_gbps},
                    {"change_pct", s.change_pct},
                    {"judged", s.judged},
                    {"regressed", s.regressed}});
  for (const auto& e : r.expected)
    exp.push_back({{"transport", e.transport},
                   {"peak_busbw_gbps", e.peak_busbw_gbps},
                   {"link_rate_gbit_s", e.link_rate_gbit_s},
                   {"link_fraction", e.link_fraction},
                   {"below", e.below}});
  return {{"baseline_version", 1},
          {"old", old_path},
          {"new", new_path},
          {"regression_pct", o.regression_pct},
          {"expect_link_fraction", o.expect_link_fraction},
          {"min_bytes", o.min_bytes},
          {"sizes", rows},
          {"expected", exp}};
}

std::string baseline_table_text(const BaselineResult& r, const BaselineOptions& o) {
  std::string out = "busbw per transport and size (GB/s), baseline vs new; judged from " +
                    size_name(o.min_bytes) + ", regression beyond " + fmt("%g", o.regression_pct) +
                    "%\n";
  Table sizes({{"transport"}, {"bytes", Align::kRight}, {"baseline", Align::kRight},
               {"new", Align::kRight}, {"change", Align::kRight}, {""}});
  for (const auto& s : r.rows)
    sizes.add_row({s.transport, size_name(s.bytes), fmt("%.3f", s.old_busbw_gbps),
                   fmt("%.3f", s.new_busbw_gbps), fmt("%+.1f", s.change_pct) + "%",
                   s.regressed ? "REGRESSED" : s.judged ? "" : "(not judged)"});
  std::ostringstream table;
  sizes.render(table);
  out += table.str();
  if (!r.expected.empty()) {
    out += "expected: peak busbw ≥ " + fmt("%.0f", o.expect_link_fraction * 100) +
           "% of the link rate\n";
    Table exp({{"transport"}, {"peak_GB/s", Align::kRight}, {"peak_Gbit/s", Align::kRight},
               {"link_Gbit/s", Align::kRight}, {"fraction", Align::kRight}, {""}});
    for (const auto& e : r.expected)
      exp.add_row({e.transport, fmt("%.3f", e.peak_busbw_gbps), fmt("%.3g", e.peak_busbw_gbps * 8),
                   fmt("%g", e.link_rate_gbit_s), fmt("%.0f", e.link_fraction * 100) + "%",
                   e.below ? "BELOW" : ""});
    std::ostringstream t2;
    exp.render(t2);
    out += t2.str();
  }
  return out;
}

}  // namespace fabkit::reports::baseline
