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
  for (const auto& n : get(s, "nodes")) {
    const std::string check = str(get(n, "check"));
    t.add_row({str(get(n, "host")), check == "ok" ? check : style.bad(check),
               fixed(get(n, "score_gbit_s"), 2),
               std::to_string(get(n, "pairs_low").get<int>()) + "/" +
                   std::to_string(get(n, "pairs_measured").get<int>()),
               get(n, "slow").get<bool>() ? style.bad("SLOW") : "ok"});
  }
  t.render(out);
}

void render_matrix(const Json& s, std::ostream& out, const Style& style) {
  const Json& m = get(s, "matrix");
  out << "\nmatrix (Gbit/s; reference " << fixed(get(m, "reference_gbit_s"), 2) << ", slow below "
      << fixed(Json(get(m, "slow_fraction").get<double>() * 100), 0) << "% of it; ! slow)\n";
  std::map<std::pair<std::string, std::string>, const Json*> cell;
  for (const auto& p : get(m, "pairs")) {
    cell[{str(get(p, "a")), str(get(p, "b"))}] = &p;
    cell[{str(get(p, "b")), str(get(p, "a"))}] = &p;
  }
  const auto& hosts = get(s, "hosts");
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
        row.push_back(!get(p, "ok").get<bool>()   ? style.bad("FAILED")
                      : get(p, "state") == "slow" ? style.bad(fixed(get(p, "gbit_s"), 2) + " !")
                                                  : fixed(get(p, "gbit_s"), 2));
      }
      grid.add_row(row);
    }
    grid.render(out);
  }
  Table bad({{"pair"}, {"state"}, {"Gbit/s", Align::kRight}, {"error"}});
  for (const auto& p : get(m, "pairs"))
    if (get(p, "state") != "ok")
      bad.add_row({str(get(p, "a")) + "<->" + str(get(p, "b")), style.bad(str(get(p, "state"))),
                   fixed(get(p, "gbit_s"), 2), str(get(p, "error"), "")});
  if (!bad.empty()) {
    out << "\npairs not ok\n";
    bad.render(out);
  }
}

void render_search(const Json& se, std::ostream& out, const Style& style) {
  if (!se.is_object()) return;
  out << "\nbad-link search (" << str(get(se, "trigger")) << "): ";
  if (!get(se, "ran").get<bool>()) {
    out << "skipped: " << str(get(se, "skipped")) << "\n";
    return;
  }
  out << str(get(se, "outcome")) << (get(se, "link").is_string() ? " " + str(get(se, "link")) : "")
      << " in " << get(se, "rounds_used") << " rounds (bound " << get(se, "rounds_bound")
      << ", full schedule " << get(se, "full_schedule_rounds") << "), slow below "
      << fixed(get(se, "threshold_gbit_s"), 2) << " Gbit/s\n";
  Table t({{"round", Align::kRight}, {"group"}, {"result"}, {"min_busbw_Gb/s", Align::kRight}});
  int k = 0;
  for (const auto& rd : get(se, "rounds")) {
    ++k;
    for (const auto& g : get(rd, "groups")) {
      std::string hs;
      for (const auto& h : get(g, "hosts")) hs += (hs.empty() ? "" : ",") + str(h);
      const Json bits = get(g, "min_busbw_gbps").is_number()
                            ? Json(get(g, "min_busbw_gbps").get<double>() * 8)
                            : Json();
      t.add_row({std::to_string(k), "{" + hs + "}",
                 get(g, "positive").get<bool>() ? style.bad("SLOW") : "ok", fixed(bits, 2)});
    }
  }
  t.render(out);
}

}  // namespace

void render_cluster_section(const Json& s, std::ostream& out, const Style& style) {
  const Json& sch = get(s, "schedule");
  out << "cluster: " << get(s, "hosts").size() << " nodes, plan " << str(get(s, "plan")) << ": "
      << get(sch, "rounds") << " rounds, " << get(sch, "pair_runs") << " pair runs ("
      << get(sch, "sequential_runs") << " pairs in all), launcher " << str(get(s, "launcher"))
      << "\n"
      << "time: node checks " << seconds(get(sch, "nodes_ms")) << " s, pair rounds "
      << seconds(get(sch, "pairs_ms")) << " s\n\n";
  render_nodes(s, out, style);
  render_matrix(s, out, style);
  render_search(s.value("search", Json()), out, style);
}

void render_plan_section(const Json& p, std::ostream& out) {
  out << "plan " << str(get(p, "plan")) << " for " << get(p, "hosts").size()
      << " nodes: " << get(p, "rounds") << " rounds (" << get(p, "waves")
      << " waves at --max-parallel " << get(p, "max_parallel") << "), " << get(p, "pair_runs")
      << " pair runs\n"
      << "estimate at " << fixed(get(p, "per_pair_s"), 1)
      << " s per pair run: " << fixed(get(p, "estimated_s"), 0)
      << " s (every pair, one at a time: " << fixed(get(p, "sequential_estimated_s"), 0)
      << " s; --pairs all in rounds: " << fixed(get(p, "all_pairs_estimated_s"), 0)
      << " s); a bad-link search adds at most " << get(p, "link_search_rounds_bound")
      << " rounds\n";
  Table t({{"round", Align::kRight}, {"pairs"}, {"idle"}});
  size_t shown = 0;
  for (const auto& rd : get(p, "schedule")) {
    if (++shown > 8) {
      t.add_row({"...", std::to_string(get(p, "schedule").size() - 8) + " more rounds"});
      break;
    }
    std::string pairs, idle;
    for (const auto& pr : get(rd, "pairs"))
      pairs += (pairs.empty() ? "" : " ") + str(pr.at(0)) + "<->" + str(pr.at(1));
    for (const auto& h : get(rd, "idle")) idle += (idle.empty() ? "" : " ") + str(h);
    t.add_row({std::to_string(shown), pairs, idle});
  }
  t.render(out);
}

}  // namespace fabkit::reports::text
