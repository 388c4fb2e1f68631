#include "slurm/fabric_search.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <stdexcept>

namespace fabkit::slurm {
namespace {

int round_robin_rounds(int g) { return g < 2 ? 0 : (g % 2 ? g : g - 1); }

class Search {
 public:
  Search(GroupTester& t, const SearchPolicy& p, FabricSearchResult& r) : t_(t), p_(p), r_(r) {}

  void run(const std::vector<int>& candidates) {
    const int n = static_cast<int>(candidates.size());
    const int g = effective_search_blocks(n, p_);
    r_.blocks = g;
    active_.insert(candidates.begin(), candidates.end());
    for (int b = 0, at = 0; b < g; ++b) {  // contiguous blocks, sizes differing by at most one
      int size = n / g + (b < n % g ? 1 : 0);
      blocks_.emplace_back(candidates.begin() + at, candidates.begin() + at + size);
      at += size;
    }
    // 1. Every block, then the union of every block pair (a positive block resolved first, so a
    // union is positive only through a link across its two blocks).
    auto res = round(blocks_);
    for (int b = 0; b < g && !stop_; ++b)
      if (res[static_cast<size_t>(b)]) resolve(blocks_[static_cast<size_t>(b)], true, -1);
    for (const Round& rd : round_robin(g)) {
      if (stop_) break;
      std::vector<std::vector<int>> groups;
      for (const auto& bp : rd.pairs) {
        auto u = live(blocks_[static_cast<size_t>(bp.a)], -1);
        auto v = live(blocks_[static_cast<size_t>(bp.b)], -1);
        u.insert(u.end(), v.begin(), v.end());
        if (u.size() >= 2) groups.push_back(std::move(u));
      }
      if (groups.empty()) continue;
      res = round(groups);
      for (size_t i = 0; i < groups.size() && !stop_; ++i)
        if (res[i]) resolve(groups[i], true, -1);
    }
    // 2. The ends taken out: each against every block (a K_{ends,g} edge colouring: an end and a
    // block at most once per round), then among themselves pair by pair.
    std::vector<int> ends;
    for (int e : removed_)
      if (!dead_.count(e)) ends.push_back(e);
    const int k = static_cast<int>(ends.size());
    for (int t = 0; t < std::max(k, g) && k > 0 && !stop_; ++t) {
      std::vector<std::vector<int>> groups;
      std::vector<std::pair<int, int>> who;  // (end, block)
      for (int i = 0; i < std::min(k, g); ++i) {
        int e = k <= g ? i : (i + t) % k, b = k <= g ? (i + t) % g : i;
        auto grp = live(blocks_[static_cast<size_t>(b)], ends[static_cast<size_t>(e)]);
        if (dead_.count(ends[static_cast<size_t>(e)]) || grp.size() < 2) continue;
        groups.push_back(std::move(grp));
        who.push_back({ends[static_cast<size_t>(e)], b});
      }
      if (groups.empty()) continue;
      res = round(groups);
      for (size_t i = 0; i < groups.size() && !stop_; ++i)
        if (res[i]) resolve(blocks_[static_cast<size_t>(who[i].second)], true, who[i].first);
    }
    for (const Round& rd : round_robin(k)) {
      if (stop_) break;
      std::vector<std::vector<int>> groups;
      for (const auto& pr : rd.pairs) {
        int a = ends[static_cast<size_t>(pr.a)], b = ends[static_cast<size_t>(pr.b)];
        if (!dead_.count(a) && !dead_.count(b) && !partners_[a].count(b)) groups.push_back({a, b});
      }
      if (groups.empty()) continue;
      res = round(groups);
      for (size_t i = 0; i < groups.size() && !stop_; ++i)
        if (res[i])
          decide(
              NodePair{std::min(groups[i][0], groups[i][1]), std::max(groups[i][0], groups[i][1])},
              true);
    }
    bool named = false;
    for (const auto& f : r_.faults) named = named || f.kind != "not_reproduced";
    r_.outcome = named ? "found" : r_.faults.empty() ? "none" : "not_reproduced";
  }

 private:
  // Counts the rounds, and every node of a clean group of two or more is no bad node (a bad node
  // makes any group holding another node positive: no known pair of a bad node is left out).
  std::vector<bool> round(const std::vector<std::vector<int>>& groups) {
    r_.rounds++;
    r_.group_tests += static_cast<int>(groups.size());
    auto out = t_.run_round(groups);
    if (out.size() != groups.size())
      throw std::logic_error("GroupTester answered " + std::to_string(out.size()) +
                             " results for " + std::to_string(groups.size()) + " groups");
    for (size_t i = 0; i < groups.size(); ++i) {
      const auto& g = groups[i];
      if (out[i] || g.size() < 2) continue;
      healthy_.insert(g.begin(), g.end());
      // Two nodes each member is known fast with: its node test's partner (a node healthy as a
      // node may still have an unknown bad link to this end; one it was clean with has not).
      for (size_t j = 0; j < g.size(); ++j)
        clean_with_[g[j]] = {g[(j + 1) % g.size()], g[(j + g.size() - 1) % g.size()]};
    }
    return out;
  }

  // The bisection's tester. Robust: a group that comes back clean is tested again, up to
  // `repeats` times in all, the clean ones of a round together in one more round: after a pair that
  // did not show again, the group is known to hold a link that hides (a flaky link), and one clean
  // answer would send the halving the wrong way.
  struct Counting : GroupTester {
    Search& s;
    bool robust;
    Counting(Search& x, bool r) : s(x), robust(r) {}
    std::vector<bool> run_round(const std::vector<std::vector<int>>& groups) override {
      auto out = s.round(groups);
      for (int t = 1; robust && t < s.p_.repeats; ++t) {
        std::vector<std::vector<int>> again;
        std::vector<size_t> at;
        for (size_t i = 0; i < groups.size(); ++i)
          if (!out[i] && groups[i].size() >= 2) {
            again.push_back(groups[i]);
            at.push_back(i);
          }
        if (again.empty()) break;
        auto res = s.round(again);
        for (size_t j = 0; j < at.size(); ++j) out[at[j]] = res[j];
      }
      return out;
    }
  };

  // The base's nodes still in the search; with an end of the sweep: that end plus them, less the
  // end's known partners (a group holding a known pair would be positive by it).
  std::vector<int> live(const std::vector<int>& base, int end) {
    std::vector<int> g;
    if (end >= 0) {
      if (dead_.count(end)) return g;
      g.push_back(end);
    }
    for (int x : base)
      if (active_.count(x) && (end < 0 || !partners_[end].count(x))) g.push_back(x);
    return g;
  }

  // Narrows a positive group to a pair, decides it, takes an end out, and tests the group again
  // until it is clean (or the cap).
  void resolve(const std::vector<int>& base, bool known_positive, int end) {
    bool robust = false;
    while (!stop_) {
      auto g = live(base, end);
      if (g.size() < 2) return;
      if (!known_positive && !round({g})[0]) return;
      known_positive = false;
      Counting c(*this, robust);
      LinkSearchResult lr = find_bad_link(g, c, true);
      robust = lr.outcome != "found";
      decide(*lr.narrowed_to, lr.outcome == "found");
    }
  }

  // The pair alone `repeats` times in all (its first test already done: first_positive), then the
  // node test; the verdicts go into the result and the active set.
  void decide(NodePair p, bool first_positive) {
    int pos = first_positive ? 1 : 0;
    for (int i = 1; i < p_.repeats; ++i) pos += round({{p.a, p.b}})[0] ? 1 : 0;
    std::vector<SearchFault> out;
    SearchFault f{pos == 0 ? "not_reproduced" : pos == p_.repeats ? "link" : "flaky_link",
                  p,
                  -1,
                  pos,
                  p_.repeats,
                  0};
    if (pos > 0) {
      std::vector<int> partners = node_test_partners(p, {});
      if (partners.size() == 2) {
        const int ends[2] = {p.a, p.b};
        auto res = round({{p.a, partners[0]}, {p.b, partners[1]}});
        // An end slow with a node it was never in a clean group with may have a second bad link
        // to that very node (healthy as a node): it is a bad node only when slow with a second
        // one too (one more round; otherwise that link is left for the search to find).
        std::vector<std::vector<int>> again;
        std::vector<int> again_end;
        for (int i = 0; i < 2; ++i)
          if (res[static_cast<size_t>(i)] && !clean_pair(ends[i], partners[static_cast<size_t>(i)]))
            again_end.push_back(i);
        if (!again_end.empty()) {
          std::vector<int> more = node_test_partners(p, partners);
          for (size_t j = 0; j < again_end.size() && j < more.size(); ++j)
            again.push_back({ends[again_end[j]], more[j]});
          // Too few nodes for a second partner (4 candidates): the one answer stands.
          if (again.size() == again_end.size()) {
            auto res2 = round(again);
            for (size_t j = 0; j < again_end.size(); ++j)
              res[static_cast<size_t>(again_end[j])] = res2[j];
          }
        }
        for (int i = 0; i < 2; ++i)
          if (res[static_cast<size_t>(i)]) {
            SearchFault nf = f;
            nf.kind = "node";
            nf.node = ends[i];
            out.push_back(nf);
          }
      }
    }
    if (out.empty()) out.push_back(f);
    for (auto& x : out) {
      x.round = r_.rounds;
      if (x.kind == "node") {
        dead_.insert(x.node);
        active_.erase(x.node);
      }
    }
    if (out.front().kind != "node") {
      partners_[p.a].insert(p.b);
      partners_[p.b].insert(p.a);
      // In the first stage both ends are active: one goes out and is swept at the end. In the
      // sweep the removed end is already out and the other end stays (its block is clean).
      if (active_.count(p.a) && active_.count(p.b)) {
        active_.erase(p.b);
        removed_.push_back(p.b);
      }
    }
    for (auto& x : out) {
      if (static_cast<int>(r_.faults.size()) >= p_.max_links) break;
      r_.faults.push_back(x);
    }
    if (static_cast<int>(r_.faults.size()) >= p_.max_links) {
      stop_ = true;
      r_.stopped_at_cap = true;
    }
  }

  // A node for each end of p to be tested with, distinct: one that end was in a clean group with
  // (known healthy, and fast with it), still active, no known pair with either end; failing that,
  // any known healthy node; failing that, any other active node. Fewer than two: no node test.
  // With the leaves known, those three on the end's own leaf come before all of them.
  bool clean_pair(int end, int x) {
    auto it = clean_with_.find(end);
    return it != clean_with_.end() && (it->second[0] == x || it->second[1] == x);
  }

  std::vector<int> node_test_partners(NodePair p, const std::vector<int>& not_these) {
    std::vector<int> out;
    auto fits = [&](int x) {
      return x != p.a && x != p.b && active_.count(x) && !partners_[p.a].count(x) &&
             !partners_[p.b].count(x) && std::find(out.begin(), out.end(), x) == out.end() &&
             std::find(not_these.begin(), not_these.end(), x) == not_these.end();
    };
    const auto& leaf = p_.leaf_of;
    auto leaf_of = [&](int x) {
      return static_cast<size_t>(x) < leaf.size() ? leaf[static_cast<size_t>(x)] : -1;
    };
    for (int end : {p.a, p.b}) {
      const size_t want = out.size() + 1;
      for (bool same_leaf : {true, false}) {
        if (same_leaf && leaf_of(end) < 0) continue;
        auto take = [&](int x) {
          if (out.size() < want && (!same_leaf || leaf_of(x) == leaf_of(end)) && fits(x))
            out.push_back(x);
        };
        auto it = clean_with_.find(end);
        if (it != clean_with_.end())
          for (int x : it->second) take(x);
        for (int h : healthy_) take(h);
        for (int h : active_) take(h);
      }
      if (out.size() < want) return {};
    }
    return out;
  }

  GroupTester& t_;
  const SearchPolicy& p_;
  FabricSearchResult& r_;
  std::vector<std::vector<int>> blocks_;
  std::set<int> active_, healthy_, dead_;
  std::vector<int> removed_;
  std::map<int, std::set<int>> partners_;
  std::map<int, std::array<int, 2>> clean_with_;
  bool stop_ = false;
};

}  // namespace

int effective_search_blocks(int n, const SearchPolicy& policy) {
  return std::clamp(policy.blocks < 1 ? 1 : policy.blocks, 1, std::max(1, n / 2));
}

int fabric_search_round_bound(int n, const SearchPolicy& policy) {
  const int g = effective_search_blocks(n, policy);
  const int m = (n + g - 1) / g, k = policy.max_links, R = policy.repeats;
  const int s = g == 1 ? n : std::min(n, 2 * m);
  return 1 + round_robin_rounds(g) + k * (R * link_search_round_bound(s) + 2) + std::max(k, g) +
         round_robin_rounds(k);
}

FabricSearchResult search_fabric(const std::vector<int>& candidates, GroupTester& tester,
                                 const SearchPolicy& policy) {
  if (candidates.size() < 2)
    throw std::invalid_argument("search_fabric needs at least 2 candidate nodes");
  if (std::set<int>(candidates.begin(), candidates.end()).size() != candidates.size())
    throw std::invalid_argument("search_fabric: a candidate node is listed twice");
  if (policy.max_links < 1 || policy.repeats < 1)
    throw std::invalid_argument("search_fabric: max_links and repeats must be 1 or more");
  FabricSearchResult r;
  r.bound = fabric_search_round_bound(static_cast<int>(candidates.size()), policy);
  Search(tester, policy, r).run(candidates);
  return r;
}

}  // namespace fabkit::slurm
