#include "slurm/cluster_text.h"

#include <cstdio>
#include <map>

#include "reports/report_render.h"

namespace fabkit::slurm {
namespace {

std::string num(const Json& j, int digits = 2) {
  if (!j.is_number()) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, j.get<double>());
  return buf;
}

std::string pad(std::string s, size_t w) {
  if (s.size() < w) s += std::string(w - s.size(), ' ');
  return s;
}

}  // namespace

void render_cluster_text(const Report& r, std::ostream& out) {
  const Json* c = nullptr;
  for (const auto& s : r.sections) {
    if (s.name == "cluster") c = &s.facts;
    if (s.name != "plan") continue;
    const Json& p = s.facts;
    out << "plan " << p["plan"].get<std::string>() << " for " << p["hosts"].size()
        << " nodes: " << p["rounds"] << " rounds (" << p["waves"] << " waves at --max-parallel "
        << p["max_parallel"] << "), " << p["pair_runs"] << " pair runs\n"
        << "estimate at " << num(p["per_pair_s"], 1)
        << " s per pair run: " << num(p["estimated_s"], 0)
        << " s (every pair, one at a time: " << num(p["sequential_estimated_s"], 0)
        << " s; --pairs all in rounds: " << num(p["all_pairs_estimated_s"], 0)
        << " s); a bad-link search adds at most " << p["link_search_rounds_bound"] << " rounds\n";
    size_t shown = 0;
    for (const auto& rd : p["schedule"]) {
      if (++shown > 8) {
        out << "  ... " << (p["schedule"].size() - 8) << " more rounds\n";
        break;
      }
      out << "  round " << shown << ":";
      for (const auto& pr : rd["pairs"])
        out << " " << pr[0].get<std::string>() << "<->" << pr[1].get<std::string>();
      for (const auto& h : rd["idle"]) out << " (" << h.get<std::string>() << " idle)";
      out << "\n";
    }
    return;  // a plan has no findings: nothing ran
  }
  if (c != nullptr) {
    const Json& s = *c;
    const Json& sch = s["schedule"];
    out << "cluster: " << s["hosts"].size() << " nodes, plan " << s["plan"].get<std::string>()
        << ": " << sch["rounds"] << " rounds, " << sch["pair_runs"] << " pair runs ("
        << sch["sequential_runs"] << " pairs in all), launcher " << s["launcher"].get<std::string>()
        << "\n"
        << "time: node checks " << num(Json(sch["nodes_ms"].get<double>() / 1000), 1)
        << " s, pair rounds " << num(Json(sch["pairs_ms"].get<double>() / 1000), 1) << " s\n\n";
    size_t w = 6;
    for (const auto& h : s["hosts"]) w = std::max(w, h.get<std::string>().size() + 1);
    out << "nodes\n  " << pad("host", w) << pad("check", 8) << pad("score_Gb/s", 12)
        << pad("low/pairs", 11) << "state\n";
    for (const auto& n : s["nodes"]) {
      std::string lp = std::to_string(n["pairs_low"].get<int>()) + "/" +
                       std::to_string(n["pairs_measured"].get<int>());
      out << "  " << pad(n["host"].get<std::string>(), w) << pad(n["check"].get<std::string>(), 8)
          << pad(num(n["score_gbit_s"]), 12) << pad(lp, 11)
          << (n["slow"].get<bool>() ? "SLOW" : "ok") << "\n";
    }
    const Json& m = s["matrix"];
    out << "\nmatrix (Gbit/s; reference " << num(m["reference_gbit_s"]) << ", slow below "
        << num(Json(m["slow_fraction"].get<double>() * 100), 0) << "% of it)\n";
    std::map<std::pair<std::string, std::string>, const Json*> cell;
    for (const auto& p : m["pairs"]) {
      cell[{p["a"], p["b"]}] = &p;
      cell[{p["b"], p["a"]}] = &p;
    }
    const auto& hosts = s["hosts"];
    if (hosts.size() <= 16) {
      out << "  " << pad("", w);
      for (const auto& h : hosts) out << pad(h.get<std::string>(), std::max<size_t>(w, 10));
      out << "\n";
      for (const auto& a : hosts) {
        out << "  " << pad(a.get<std::string>(), w);
        for (const auto& b : hosts) {
          auto it = cell.find({a, b});
          std::string v = a == b                             ? "."
                          : it == cell.end()                 ? ""
                          : !(*it->second)["ok"].get<bool>() ? "FAILED"
                                                             : num((*it->second)["gbit_s"]);
          if (it != cell.end() && (*it->second)["state"] == "slow") v += " !";
          out << pad(v, std::max<size_t>(w, 10));
        }
        out << "\n";
      }
    }
    bool any = false;
    for (const auto& p : m["pairs"]) {
      if (p["state"] == "ok") continue;
      if (!any) out << "\npairs not ok\n";
      any = true;
      out << "  " << p["a"].get<std::string>() << "<->" << p["b"].get<std::string>() << ": "
          << p["state"].get<std::string>() << " " << num(p["gbit_s"]) << " Gbit/s"
          << (p["error"].is_string() ? " (" + p["error"].get<std::string>() + ")" : "") << "\n";
    }
    const Json& se = s.value("search", Json());
    if (se.is_object()) {
      out << "\nbad-link search (" << se["trigger"].get<std::string>() << "): ";
      if (!se["ran"].get<bool>()) {
        out << "skipped: " << se["skipped"].get<std::string>() << "\n";
      } else {
        out << se["outcome"].get<std::string>()
            << (se["link"].is_string() ? " " + se["link"].get<std::string>() : "") << " in "
            << se["rounds_used"] << " rounds (bound " << se["rounds_bound"] << ", full schedule "
            << se["full_schedule_rounds"] << "), slow below " << num(se["threshold_gbit_s"])
            << " Gbit/s\n";
        int k = 0;
        for (const auto& rd : se["rounds"]) {
          out << "  round " << ++k << ":";
          for (const auto& g : rd["groups"]) {
            std::string hs;
            for (const auto& h : g["hosts"]) hs += (hs.empty() ? "" : ",") + h.get<std::string>();
            out << " {" << hs << "} " << (g["positive"].get<bool>() ? "SLOW" : "ok") << " "
                << num(Json(g["min_busbw_gbps"].is_number() ? g["min_busbw_gbps"].get<double>() * 8 : -1))
                << ";";
          }
          out << "\n";
        }
      }
    }
    out << "\n";
  }
  reports::render_text(r, out);
}

}  // namespace fabkit::slurm
