#include "slurm/plan_coverage.h"

#include <algorithm>

namespace fabkit::slurm {
namespace {

std::string count_text(int64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

std::vector<int> leaf_spine_loads(const std::vector<Round>& rounds, const FabricTopology& t) {
  const int leaves = t.leaves(), spines = t.spines;
  std::vector<int> loads(static_cast<size_t>(spines > 0 ? 2 * leaves * spines : 0), 0);
  if (spines <= 0) return loads;
  const size_t down = static_cast<size_t>(leaves) * static_cast<size_t>(spines);
  auto add = [&](int src, int dst) {
    const int s = spine_for(t, src, dst);
    if (s < 0) return;
    ++loads[static_cast<size_t>(t.leaf(src) * spines + s)];
    ++loads[down + static_cast<size_t>(t.leaf(dst) * spines + s)];
  };
  for (const auto& r : rounds)
    for (const auto& p : r.pairs) {
      add(p.a, p.b);
      add(p.b, p.a);
    }
  return loads;
}

std::string path_name(const LeafSpinePath& p) {
  const std::string spine = "spine " + std::to_string(p.spine);
  return p.up ? p.leaf_name + " -> " + spine : spine + " -> " + p.leaf_name;
}

PlanCoverage plan_coverage(const std::vector<Round>& rounds, const FabricTopology& t,
                           const std::vector<std::string>& topology_notes) {
  PlanCoverage c;
  const int n = t.nodes;
  c.nodes = n;
  c.rails = t.rails;
  c.pairs_total = static_cast<int64_t>(n) * (n - 1) / 2;
  c.leaves = t.leaves();
  c.spines = t.spines;
  const bool leaves_known = !t.leaf_of.empty();
  c.topology = !leaves_known ? "unknown" : t.spines > 0 ? "leaves+spines" : "leaves";

  std::vector<int> per_node(static_cast<size_t>(n), 0);
  const size_t L = static_cast<size_t>(c.leaves);
  std::vector<char> met(leaves_known ? L * L : 0, 0);
  for (const auto& r : rounds)
    for (const auto& p : r.pairs) {
      ++c.pairs_measured;
      ++per_node[static_cast<size_t>(p.a)];
      ++per_node[static_cast<size_t>(p.b)];
      if (!leaves_known) continue;
      const int la = t.leaf(p.a), lb = t.leaf(p.b);
      if (la == lb) continue;
      char& m =
          met[static_cast<size_t>(std::min(la, lb)) * L + static_cast<size_t>(std::max(la, lb))];
      if (!m) ++c.leaf_pairs_met;
      m = 1;
    }
  if (n > 0) {
    std::vector<int> sorted = per_node;
    std::sort(sorted.begin(), sorted.end());
    c.min_pairs_per_node = sorted.front();
    const size_t mid = sorted.size() / 2;
    c.median_pairs_per_node =
        sorted.size() % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2.0;
    c.nodes_under_2 =
        static_cast<int>(std::count_if(sorted.begin(), sorted.end(), [](int k) { return k < 2; }));
  }
  if (leaves_known) c.leaf_pairs = static_cast<int64_t>(L) * (static_cast<int64_t>(L) - 1) / 2;

  if (t.spines > 0) {
    auto loads = leaf_spine_loads(rounds, t);
    c.paths = static_cast<int>(loads.size());
    const size_t down = loads.size() / 2;
    // Listed leaf by leaf, up before down, so the first few name whole leaves.
    for (int leaf = 0; leaf < c.leaves; ++leaf)
      for (int up = 1; up >= 0; --up)
        for (int s = 0; s < t.spines; ++s) {
          size_t i = static_cast<size_t>(leaf * t.spines + s) + (up ? 0 : down);
          if (loads[i] >= 2) continue;
          ++c.paths_under_2;
          if (c.paths_under_2_first.size() < kCoverageListed) {
            std::string name = leaf < static_cast<int>(t.leaf_names.size())
                                   ? t.leaf_names[static_cast<size_t>(leaf)]
                                   : "leaf" + std::to_string(leaf);
            c.paths_under_2_first.push_back({leaf, name, s, up == 1, loads[i]});
          }
        }
  }

  // What the plan does not cover, in the words an operator needs.
  auto& notes = c.notes;
  if (c.pairs_measured < c.pairs_total)
    notes.push_back(
        count_text(c.pairs_total - c.pairs_measured, "pair of nodes is", "pairs of nodes are") +
        " not measured: a bad link between two nodes the plan never pairs is found "
        "only by the bad-link search");
  if (c.nodes_under_2 > 0)
    notes.push_back(count_text(c.nodes_under_2, "node is", "nodes are") +
                    " in fewer than 2 pairs: a slow node there cannot be told from a bad link");
  if (!leaves_known) {
    notes.push_back(
        "topology unknown (no --topology): leaf<->spine paths and leaf pairs not judged; give "
        "--topology FILE (Slurm topology.conf) to plan and judge them");
  } else if (t.spines <= 0) {
    notes.push_back("spines unknown: leaf<->spine coverage not judged");
  } else {
    if (c.paths_under_2 > 0) {
      std::string first;
      for (const auto& p : c.paths_under_2_first)
        first += (first.empty() ? "" : ", ") + path_name(p) + " (" + std::to_string(p.loads) + ")";
      notes.push_back(
          count_text(c.paths_under_2, "leaf<->spine path is", "leaf<->spine paths are") +
          " loaded fewer than 2 times (" + first +
          (c.paths_under_2 > static_cast<int>(kCoverageListed) ? ", ..." : "") +
          "): a bad spine port there shows in at most one pair run");
    }
    notes.push_back(
        "assumes destination-based routing (D-mod-K, as OpenSM's ftree and updn engines route a "
        "two-level tree); adaptive routing spreads traffic over the spines, so which paths a pair "
        "run loads is not known");
  }
  if (leaves_known && c.leaf_pairs_met < c.leaf_pairs)
    notes.push_back(
        count_text(c.leaf_pairs - c.leaf_pairs_met, "pair of leaves has", "pairs of leaves have") +
        " no pair run between them");
  if (t.rails > 1)
    notes.push_back("each pair run measures all " + std::to_string(t.rails) +
                    " rails of both nodes (the RC test runs per rail), so every rail is measured "
                    "as often as its node is paired");
  notes.insert(notes.end(), topology_notes.begin(), topology_notes.end());
  return c;
}

}  // namespace fabkit::slurm
