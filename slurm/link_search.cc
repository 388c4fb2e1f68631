#include "slurm/link_search.h"

#include <algorithm>
#include <stdexcept>

namespace fabkit::slurm {
namespace {

struct Counter {
  GroupTester& t;
  LinkSearchResult& r;
  std::vector<bool> run(const std::vector<std::vector<int>>& groups) {
    r.rounds++;
    r.group_tests += static_cast<int>(groups.size());
    auto out = t.run_round(groups);
    if (out.size() != groups.size())
      throw std::logic_error("GroupTester answered " + std::to_string(out.size()) +
                             " results for " + std::to_string(groups.size()) + " groups");
    return out;
  }
};

std::vector<int> join(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> s = a;
  s.insert(s.end(), b.begin(), b.end());
  return s;
}

int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

}  // namespace

int link_search_round_bound(int n) {
  // Halving inside a half costs one round per level; a crossing link then costs at most
  // ceil(log2(n/2)) rounds per side. The sum is largest when the link crosses at the top.
  int half = (n + 1) / 2;
  return 1 + 1 + 2 * ceil_log2(half) + 1;
}

LinkSearchResult find_bad_link(const std::vector<int>& candidates, GroupTester& tester,
                               bool known_positive) {
  if (candidates.size() < 2)
    throw std::invalid_argument("find_bad_link needs at least 2 candidate nodes");
  LinkSearchResult r;
  Counter c{tester, r};
  std::vector<int> s = candidates;
  // The last two-node group that tested positive: when the search ends on that very pair, the
  // confirming test would only repeat it (each round of a real group test costs seconds).
  std::vector<int> positive_pair;
  auto note = [&](const std::vector<int>& g, bool positive) {
    if (positive && g.size() == 2) positive_pair = {std::min(g[0], g[1]), std::max(g[0], g[1])};
    return positive;
  };
  if (!known_positive && !note(s, c.run({s})[0])) {
    r.outcome = "none";
    return r;
  }
  // Phase 1: both halves in one round (they are disjoint). A positive half holds the whole link;
  // two negative halves mean the link crosses them.
  std::vector<int> a, b;
  while (true) {
    if (s.size() == 2) {
      a = {s[0]};
      b = {s[1]};
      break;
    }
    size_t mid = s.size() / 2;
    a.assign(s.begin(), s.begin() + mid);
    b.assign(s.begin() + mid, s.end());
    auto res = c.run({a, b});
    note(a, res[0]);
    note(b, res[1]);
    if (res[0]) {
      s = a;
    } else if (res[1]) {
      s = b;
    } else {
      break;
    }
  }
  // Phase 2: a and b are each clean inside, the link joins one node of a to one of b. Halve a
  // against all of b, then b against the one node found in a.
  while (a.size() > 1) {
    std::vector<int> a1(a.begin(), a.begin() + a.size() / 2), a2(a.begin() + a.size() / 2, a.end());
    auto g = join(a1, b);
    a = note(g, c.run({g})[0]) ? a1 : a2;
  }
  while (b.size() > 1) {
    std::vector<int> b1(b.begin(), b.begin() + b.size() / 2), b2(b.begin() + b.size() / 2, b.end());
    auto g = join(a, b1);
    b = note(g, c.run({g})[0]) ? b1 : b2;
  }
  // A flaky link may pass the test that decided a branch: confirm the pair alone, unless the
  // last positive two-node test was this pair.
  std::vector<int> pair = {std::min(a[0], b[0]), std::max(a[0], b[0])};
  r.narrowed_to = NodePair{pair[0], pair[1]};
  if (positive_pair != pair && !c.run({pair})[0]) {
    r.outcome = "not_reproduced";
    return r;
  }
  r.link = NodePair{std::min(a[0], b[0]), std::max(a[0], b[0])};
  r.outcome = "found";
  return r;
}

}  // namespace fabkit::slurm
