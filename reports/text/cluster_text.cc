// Text of the "cluster" section (the nodes table, the pair matrix as a grid up to 16 nodes, the
// pairs that are not ok, the bad-link search) and of the "plan" section (--plan-only).
#include <map>

#include "reports/text/table.h"
#include "reports/text/terminal_safe.h"
#include "reports/text/text_parts.h"

namespace fabkit::reports::text {
namespace {

std::string seconds(const Json& ms) {
  return ms.is_number() ? fixed(Json(ms.get<double>() / 1000), 1) : "-";
}

// "8 ok", "8: 1 FAIL (gpu.remap_pending)", "-" without a GPU section.
std::string gpu_health_cell(const Json& g, const Style& style) {
  if (!g.is_object() || !member(g, "gpus").is_number()) return "-";
  std::string s = member(g, "gpus").dump();
  const Json& failing = member(g, "gpus_failing");
  const Json& warning = member(g, "gpus_warning");
  int fails = failing.is_number() ? failing.get<int>() : 0;
  int warns = warning.is_number() ? warning.get<int>() : 0;
  if (fails == 0 && warns == 0) return s + " ok";
  std::string codes;
  for (const auto& c : member(g, "codes"))
    if (c.is_string()) codes += (codes.empty() ? "" : ",") + terminal_safe(c.get<std::string>());
  return s + ":" + (fails ? " " + style.bad(std::to_string(fails) + " FAIL") : "") +
         (warns ? " " + std::to_string(warns) + " warn" : "") + " (" + codes + ")";
}

void render_nodes(const Json& s, std::ostream& out, const Style& style) {
  out << "nodes\n";
  // The gpus column only where a node report had GPUs to say something about.
  bool gpus = false;
  for (const auto& n : member(s, "nodes"))
    gpus = gpus || member(member(n, "gpu_health"), "gpus").is_number();
  std::vector<Column> columns{
      {"host"}, {"check"}, {"score_Gb/s", Align::kRight}, {"low/pairs", Align::kRight}, {"state"}};
  if (gpus) columns.push_back({"gpus"});
  Table t(columns);
  for (const auto& n : member(s, "nodes")) {
    const std::string check = str(member(n, "check"));
    std::vector<std::string> row{str(member(n, "host")), check == "ok" ? check : style.bad(check),
                                 fixed(member(n, "score_gbit_s"), 2),
                                 std::to_string(member(n, "pairs_low").get<int>()) + "/" +
                                     std::to_string(member(n, "pairs_measured").get<int>()),
                                 member(n, "slow").get<bool>() ? style.bad("SLOW") : "ok"};
    if (gpus) row.push_back(gpu_health_cell(member(n, "gpu_health"), style));
    t.add_row(row);
  }
  t.render(out);
}

void render_matrix(const Json& s, std::ostream& out, const Style& style) {
  const Json& m = member(s, "matrix");
  out << "\nmatrix (Gbit/s; reference " << fixed(member(m, "reference_gbit_s"), 2)
      << ", slow below " << fixed(Json(member(m, "slow_fraction").get<double>() * 100), 0)
      << "% of it; ! slow)\n";
  std::map<std::pair<std::string, std::string>, const Json*> cell;
  for (const auto& p : member(m, "pairs")) {
    cell[{str(member(p, "a")), str(member(p, "b"))}] = &p;
    cell[{str(member(p, "b")), str(member(p, "a"))}] = &p;
  }
  const auto& hosts = member(s, "hosts");
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
        row.push_back(!member(p, "ok").get<bool>() ? style.bad("FAILED")
                      : member(p, "state") == "slow"
                          ? style.bad(fixed(member(p, "gbit_s"), 2) + " !")
                          : fixed(member(p, "gbit_s"), 2));
      }
      grid.add_row(row);
    }
    grid.render(out);
  }
  Table bad({{"pair"}, {"state"}, {"Gbit/s", Align::kRight}, {"error"}});
  for (const auto& p : member(m, "pairs"))
    if (member(p, "state") != "ok")
      bad.add_row({str(member(p, "a")) + "<->" + str(member(p, "b")),
                   style.bad(str(member(p, "state"))), fixed(member(p, "gbit_s"), 2),
                   str(member(p, "error"), "")});
  if (!bad.empty()) {
    out << "\npairs not ok\n";
    bad.render(out);
  }
}

void render_search(const Json& se, std::ostream& out, const Style& style) {
  if (!se.is_object()) return;
  out << "\nbad-link search (" << str(member(se, "trigger")) << "): ";
  if (!member(se, "ran").get<bool>()) {
    out << "skipped: " << str(member(se, "skipped")) << "\n";
    return;
  }
  out << str(member(se, "outcome"))
      << (member(se, "link").is_string() ? " " + str(member(se, "link")) : "") << " in "
      << member(se, "rounds_used") << " rounds (bound " << member(se, "rounds_bound")
      << ", full schedule " << member(se, "full_schedule_rounds") << ")";
  if (se.contains("blocks") && se["blocks"].is_number())
    out << ", first stage in " << se["blocks"] << " blocks";
  out << ", slow below " << fixed(member(se, "threshold_gbit_s"), 2) << " Gbit/s\n";
  // Every fault named: a node as the node, a pair as the link and how often it was slow alone.
  if (se.contains("faults") && se["faults"].is_array())
    for (const auto& x : se["faults"]) {
      const std::string kind = str(member(x, "kind"));
      const Json& h = member(x, "hosts");
      const std::string pair = str(h[0]) + "<->" + str(h[1]);
      out << "  " << (kind == "not_reproduced" ? kind : style.bad(kind)) << " "
          << (kind == "node" ? str(member(x, "node")) + " (narrowed to " + pair + ")" : pair)
          << ": slow alone in " << member(x, "positives") << " of " << member(x, "repeats")
          << " tests, round " << member(x, "round") << "\n";
    }
  if (se.value("stopped_at_cap", false))
    out << "  " << style.bad("stopped at --search-max-links") << ": more may be left\n";
  Table t({{"round", Align::kRight}, {"group"}, {"result"}, {"min_busbw_Gb/s", Align::kRight}});
  int k = 0;
  for (const auto& rd : member(se, "rounds")) {
    ++k;
    for (const auto& g : member(rd, "groups")) {
      // A group of the first stage at scale holds hundreds of nodes: its first and last 3.
      std::string hs;
      const Json& hosts = member(g, "hosts");
      for (size_t i = 0; i < hosts.size(); ++i) {
        if (hosts.size() > 8 && i == 3) {
          hs += ",...(" + std::to_string(hosts.size()) + " nodes)";
          i = hosts.size() - 3;
        }
        hs += (hs.empty() ? "" : ",") + str(hosts[i]);
      }
      const Json bits = member(g, "min_busbw_gbps").is_number()
                            ? Json(member(g, "min_busbw_gbps").get<double>() * 8)
                            : Json();
      t.add_row({std::to_string(k), "{" + hs + "}",
                 member(g, "positive").get<bool>() ? style.bad("SLOW") : "ok", fixed(bits, 2)});
    }
  }
  t.render(out);
}

// Shifts and coverage: shared by --plan-only and a run's "plan:" lines.
void render_plan_coverage(const Json& planner, const Json& cov, std::ostream& out) {
  std::string shifts;
  for (const auto& s : member(planner, "shifts"))
    shifts += (shifts.empty() ? "" : ", ") + s.dump() + (s == 1 ? " (ring)" : "");
  if (!shifts.empty())
    out << "shifts (pairs i, i+s over the hosts "
        << (str(member(cov, "topology")) == "unknown" ? "as given" : "sorted by leaf")
        << "): " << shifts << "\n";
  out << "coverage: " << member(cov, "pairs_measured") << " of " << member(cov, "pairs_total")
      << " pairs; pairs per node min " << member(cov, "min_pairs_per_node") << ", median "
      << fixed(member(cov, "median_pairs_per_node"), 1) << "; topology "
      << str(member(cov, "topology"));
  if (str(member(cov, "topology")) != "unknown")
    out << " (" << member(cov, "leaves") << " leaves, " << member(cov, "spines") << " spines)";
  out << ", " << member(cov, "rails") << " rail(s) a node\n";
  const Json& paths = member(cov, "leaf_spine_paths");
  if (paths.is_number() && paths.get<int>() > 0)
    out << "  leaf<->spine paths (each direction): " << member(cov, "leaf_spine_paths")
        << ", loaded fewer than 2 times: " << member(cov, "paths_under_2_loads") << "\n";
  if (member(cov, "leaf_pairs").is_number() && member(cov, "leaf_pairs").get<int64_t>() > 0)
    out << "  pairs of leaves met: " << member(cov, "leaf_pairs_met") << " of "
        << member(cov, "leaf_pairs") << "\n";
  for (const auto& n : member(cov, "notes")) out << "  - " << str(n) << "\n";
}

}  // namespace

void render_cluster_section(const Json& s, std::ostream& out, const Style& style) {
  const Json& sch = member(s, "schedule");
  out << "cluster: " << member(s, "hosts").size() << " nodes, plan " << str(member(s, "plan"))
      << ": " << member(sch, "rounds") << " rounds, " << member(sch, "pair_runs") << " pair runs ("
      << member(sch, "sequential_runs") << " pairs in all), launcher " << str(member(s, "launcher"))
      << "\n"
      << "time: node checks " << seconds(member(sch, "nodes_ms")) << " s, pair rounds "
      << seconds(member(sch, "pairs_ms")) << " s\n";
  const Json planner = sch.value("planner", Json());
  if (planner.is_object()) {
    out << "plan: " << str(member(planner, "why")) << "\n";
    render_plan_coverage(planner, member(planner, "coverage"), out);
  }
  out << "\n";
  render_nodes(s, out, style);
  render_matrix(s, out, style);
  render_search(s.value("search", Json()), out, style);
}

void render_plan_section(const Json& p, std::ostream& out) {
  const Json& cov = member(p, "coverage");
  out << "plan " << str(member(p, "plan")) << " (--pairs " << str(member(p, "pairs")) << ") for "
      << member(p, "hosts").size() << " nodes: " << member(p, "rounds") << " rounds ("
      << member(p, "waves") << " waves at --max-parallel " << member(p, "max_parallel") << "), "
      << member(p, "pair_runs") << " pair runs\n"
      << "why: " << str(member(p, "why")) << "\n"
      << "estimate at " << fixed(member(p, "per_pair_s"), 1)
      << " s per pair run: " << fixed(member(p, "estimated_s"), 0) << " s pair rounds + "
      << fixed(member(p, "search_reserve_s"), 0) << " s kept for the bad-link search = "
      << fixed(member(p, "total_estimated_s"), 0) << " s of the "
      << fixed(member(p, "budget_s"), 0) << " s budget"
      << (member(p, "fits_budget") == false ? " (OVER BUDGET)" : "") << "\n"
      << "  (every pair, one at a time: " << fixed(member(p, "sequential_estimated_s"), 0)
      << " s; --pairs all in rounds: " << fixed(member(p, "all_pairs_estimated_s"), 0)
      << " s); a bad-link search takes at most " << member(p, "link_search_rounds_bound")
      << " rounds\n";
  if (cov.is_object()) render_plan_coverage(p, cov, out);
  Table t({{"round", Align::kRight}, {"pairs"}, {"idle"}});
  size_t shown = 0;
  for (const auto& rd : member(p, "schedule")) {
    if (++shown > 8) {
      t.add_row({"...", std::to_string(member(p, "schedule").size() - 8) + " more rounds"});
      break;
    }
    // A round of a 1,000-node plan holds 500 pairs: the first few, then how many more (--json
    // has them all).
    std::string pairs, idle;
    const Json& rp = member(rd, "pairs");
    for (size_t i = 0; i < rp.size() && i < 6; ++i)
      pairs += (pairs.empty() ? "" : " ") + str(rp[i].at(0)) + "<->" + str(rp[i].at(1));
    if (rp.size() > 6) pairs += " ... (" + std::to_string(rp.size()) + " pairs)";
    const Json& ri = member(rd, "idle");
    for (size_t i = 0; i < ri.size() && i < 6; ++i) idle += (idle.empty() ? "" : " ") + str(ri[i]);
    if (ri.size() > 6) idle += " ... (" + std::to_string(ri.size()) + ")";
    t.add_row({std::to_string(shown), pairs, idle});
  }
  t.render(out);
}

}  // namespace fabkit::reports::text
