#include "slurm/path_judge.h"

#include <algorithm>
#include <map>
#include <set>

namespace fabkit::slurm {
namespace {

bool link_is_slow(const LinkVerdict& l) {
  return l.state == "slow" || l.state == "failed" || l.state == "node";
}

// The nodes every pair in the list shares (0, 1 or 2 of them).
std::set<int> common_nodes(const std::vector<const LinkVerdict*>& pairs) {
  std::set<int> common;
  bool first = true;
  for (const auto* l : pairs) {
    std::set<int> both = {l->a, l->b};
    if (first) {
      common = both;
      first = false;
      continue;
    }
    std::set<int> keep;
    for (int x : common)
      if (both.count(x)) keep.insert(x);
    common = keep;
  }
  return common;
}

}  // namespace

std::vector<SpinePath> pair_spine_paths(const FabricTopology& t, int a, int b) {
  std::vector<SpinePath> out;
  const int up = spine_for(t, a, b), back = spine_for(t, b, a);
  if (up < 0) return out;
  for (SpinePath p : {SpinePath{t.leaf(a), up}, SpinePath{t.leaf(b), up},
                      SpinePath{t.leaf(b), back}, SpinePath{t.leaf(a), back}})
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  return out;
}

std::string spine_path_name(const FabricTopology& t, const SpinePath& p) {
  std::string leaf = p.leaf < static_cast<int>(t.leaf_names.size())
                         ? t.leaf_names[static_cast<size_t>(p.leaf)]
                         : "leaf" + std::to_string(p.leaf);
  return leaf + "<->spine" + std::to_string(p.spine);
}

PathJudgement judge_spine_paths(const std::vector<std::string>& hosts, const FabricTopology& t,
                                const MatrixVerdict& v) {
  PathJudgement j;
  if (t.spines <= 0 || t.leaves() < 2) return j;
  std::map<std::pair<int, int>, int> crossing;
  std::map<std::pair<int, int>, std::vector<const LinkVerdict*>> slow;
  for (const auto& l : v.links)
    for (const SpinePath& p : pair_spine_paths(t, l.a, l.b)) {
      crossing[{p.leaf, p.spine}]++;
      if (link_is_slow(l)) slow[{p.leaf, p.spine}].push_back(&l);
    }
  std::set<const LinkVerdict*> explained;
  while (true) {
    const std::pair<int, int>* best = nullptr;
    std::vector<const LinkVerdict*> best_pairs;
    for (const auto& [key, pairs] : slow) {
      std::vector<const LinkVerdict*> open;
      for (const auto* l : pairs)
        if (!explained.count(l)) open.push_back(l);
      // The majority counts every slow pair through the cable (explained or not): a cable whose
      // pairs are mostly slow is bad whatever else was named.
      const int n_slow = static_cast<int>(pairs.size()), n_cross = crossing[key];
      if (open.size() < 2 || 2 * n_slow <= n_cross || !common_nodes(open).empty()) continue;
      if (!best || open.size() > best_pairs.size()) {
        best = &key;
        best_pairs = open;
      }
    }
    if (!best) break;
    // Another cable through which every one of these slow pairs runs too (a plan that crosses a
    // leaf's uplinks with few pairs: the ring's two pairs at a leaf boundary share both cables)
    // would explain them as well: name neither, the links stay the matrix judge's.
    bool ambiguous = false;
    for (const auto& [key, pairs] : slow) {
      if (key == *best || 2 * static_cast<int>(pairs.size()) <= crossing[key]) continue;
      ambiguous = ambiguous || std::all_of(best_pairs.begin(), best_pairs.end(), [&](auto* l) {
                    return std::find(pairs.begin(), pairs.end(), l) != pairs.end();
                  });
    }
    if (ambiguous) {
      explained.insert(best_pairs.begin(), best_pairs.end());
      continue;
    }
    SpinePathVerdict pv;
    pv.path = {best->first, best->second};
    pv.crossing = crossing[*best];
    pv.slow = static_cast<int>(slow[*best].size());
    std::set<int> nodes;
    for (const auto* l : best_pairs) {
      explained.insert(l);
      nodes.insert(l->a);
      nodes.insert(l->b);
    }
    pv.nodes.assign(nodes.begin(), nodes.end());
    const std::string name = spine_path_name(t, pv.path);
    std::string some;
    for (size_t i = 0; i < pv.nodes.size() && i < 6; ++i)
      some += (i ? ", " : "") + hosts[static_cast<size_t>(pv.nodes[i])];
    if (pv.nodes.size() > 6) some += " and " + std::to_string(pv.nodes.size() - 6) + " more";
    j.findings.push_back(fail(
        "cluster.spine_path_slow", name,
        std::to_string(pv.slow) + " of the " + std::to_string(pv.crossing) +
            " measured pairs routed through " + name +
            " (destination-based D-mod-K routing) are slow or failed, and no one node is in all "
            "of them: the cable or a switch port between the leaf and the spine, not the nodes (" +
            some + ")",
        "check the cable and both switch ports between " + name +
            " (port error counters: `ibqueryerrors`, `perfquery` on the switch ports, or the "
            "switch's own counters), reseat or replace it; the link and node findings on these "
            "pairs are this path's"));
    j.slow_paths.push_back(std::move(pv));
  }
  return j;
}

}  // namespace fabkit::slurm
