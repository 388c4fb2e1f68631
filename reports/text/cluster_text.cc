// Text of the "cluster" section (the nodes table, the pair matrix as a grid up to 16 nodes, the
// pairs that are not ok, the bad-link search) and of the "plan" section (--plan-only).
#include <map>

#include "reports/text/table.h"
#include "reports/text/text_parts.h"

namespace fabkit::reports::text {
namespace {

std::string seconds(const Json& ms) {
  return ms.is_number() ? fixed(Json(ms.get<double>() / 1000), 1) : "-";
}

void render_nodes(const Json& s, std::ostream& out, const Style& style) {
  out << "nodes\n";
  Table t({{"host"},
           {"check"},
           {"score_Gb/s", Align::kRight},
           {"low/pairs", Align::kRight},
           {"state"}});
  for (const auto& n : s["nodes"]) {
    const std::string check = str(n["check"]);
    t.add_row({str(n["host"]), check == "ok" ? check : style.bad(check),
               fixed(n["score_gbit_s"], 2),
               std::to_string(n["pairs_low"].get<int>()) + "/" +
                   std::to_string(n["pairs_measured"].get<int>()),
               n["slow"].get<bool>() ? style.bad("SLOW") : "ok"});
  }
  t.render(out);
}

void render_matrix(const Json& s, std::ostream& out, const Style& style) {
  const Json& m = s["matrix"];
  out << "\nmatrix (Gbit/s; reference " << fixed(m["reference_gbit_s"], 2) << ", slow below "
      << fixed(Json(m["slow_fraction"].get<double>() * 100), 0) << "% of it; ! slow)\n";
  std::map<std::pair<std::string, std::string>, const Json*> cell;
  for (const auto& p : m["pairs"]) {
    cell[{str(p["a"]), str(p["b"])}] = &p;
    cell[{str(p["b"]), str(p["a"])}] = &p;
  }
  const auto& hosts = s["hosts"];
  if (hosts.size() <= 16) {
    std::vector<Column> cols{{""}};
    for (const auto& h : hosts) cols.push_back({str(h), Align::kRight});
    Table grid(cols);
    for (const auto& a : hosts) {
      std::vector<std::string> row{str(a)};
      for (const auto& b : hosts) {
        auto it = cell.find({str(a), str(b)});
        if (a == b || it == cell.end()) {
          row.push_back(a == b ? "." : "");
          continue;
        }
        const Json& p = *it->second;
        row.push_back(!p["ok"].get<bool>()   ? style.bad("FAILED")
                      : p["state"] == "slow" ? style.bad(fixed(p["gbit_s"], 2) + " !")
                                             : fixed(p["gbit_s"], 2));
      }
      grid.add_row(row);
    }
    grid.render(out);
  }
  Table bad({{"pair"}, {"state"}, {"Gbit/s", Align::kRight}, {"error"}});
  for (const auto& p : m["pairs"])
    if (p["state"] != "ok")
      bad.add_row({str(p["a"]) + "<->" + str(p["b"]), style.bad(str(p["state"])),
                   fixed(p["gbit_s"], 2), str(p["error"], "")});
  if (!bad.empty()) {
    out << "\npairs not ok\n";
    bad.render(out);
  }
}

void render_search(const Json& se, std::ostream& out, const Style& style) {
  if (!se.is_object()) return;
  out << "\nbad-link search (" << str(se["trigger"]) << "): ";
  if (!se["ran"].get<bool>()) {
    out << "skipped: " << str(se["skipped"]) << "\n";
    return;
  }
  out << str(se["outcome"]) << (se["link"].is_string() ? " " + str(se["link"]) : "") << " in "
      << se["rounds_used"] << " rounds (bound " << se["rounds_bound"] << ", full schedule "
      << se["full_schedule_rounds"] << "), slow below " << fixed(se["threshold_gbit_s"], 2)
      << " Gbit/s\n";
  Table t({{"round", Align::kRight}, {"group"}, {"result"}, {"min_busbw_Gb/s", Align::kRight}});
  int k = 0;
  for (const auto& rd : se["rounds"]) {
    ++k;
    for (const auto& g : rd["groups"]) {
      std::string hs;
      for (const auto& h : g["hosts"]) hs += (hs.empty() ? "" : ",") + str(h);
      const Json bits =
          g["min_busbw_gbps"].is_number() ? Json(g["min_busbw_gbps"].get<double>() * 8) : Json();
      t.add_row({std::to_string(k), "{" + hs + "}",
                 g["positive"].get<bool>() ? style.bad("SLOW") : "ok", fixed(bits, 2)});
    }
  }
  t.render(out);
}

}  // namespace

void render_cluster_section(const Json& s, std::ostream& out, const Style& style) {
  const Json& sch = s["schedule"];
  out << "cluster: " << s["hosts"].size() << " nodes, plan " << str(s["plan"]) << ": "
      << sch["rounds"] << " rounds, " << sch["pair_runs"] << " pair runs ("
      << sch["sequential_runs"] << " pairs in all), launcher " << str(s["launcher"]) << "\n"
      << "time: node checks " << seconds(sch["nodes_ms"]) << " s, pair rounds "
      << seconds(sch["pairs_ms"]) << " s\n\n";
  render_nodes(s, out, style);
  render_matrix(s, out, style);
  render_search(s.value("search", Json()), out, style);
}

void render_plan_section(const Json& p, std::ostream& out) {
  out << "plan " << str(p["plan"]) << " for " << p["hosts"].size() << " nodes: " << p["rounds"]
      << " rounds (" << p["waves"] << " waves at --max-parallel " << p["max_parallel"] << "), "
      << p["pair_runs"] << " pair runs\n"
      << "estimate at " << fixed(p["per_pair_s"], 1)
      << " s per pair run: " << fixed(p["estimated_s"], 0)
      << " s (every pair, one at a time: " << fixed(p["sequential_estimated_s"], 0)
      << " s; --pairs all in rounds: " << fixed(p["all_pairs_estimated_s"], 0)
      << " s); a bad-link search adds at most " << p["link_search_rounds_bound"] << " rounds\n";
  Table t({{"round", Align::kRight}, {"pairs"}, {"idle"}});
  size_t shown = 0;
  for (const auto& rd : p["schedule"]) {
    if (++shown > 8) {
      t.add_row({"...", std::to_string(p["schedule"].size() - 8) + " more rounds"});
      break;
    }
    std::string pairs, idle;
    for (const auto& pr : rd["pairs"])
      pairs += (pairs.empty() ? "" : " ") + str(pr[0]) + "<->" + str(pr[1]);
    for (const auto& h : rd["idle"]) idle += (idle.empty() ? "" : " ") + str(h);
    t.add_row({std::to_string(shown), pairs, idle});
  }
  t.render(out);
}

}  // namespace fabkit::reports::text
