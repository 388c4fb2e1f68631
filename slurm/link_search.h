// Group testing for one bad link among N nodes in O(log N) rounds, instead of the N-1 rounds of a
// full tournament: once a cheap pass (the ring plan, or a collective that ran slow) says "some
// link is bad" but not which, bisect the candidate nodes.
//
// The test model: a group test runs an all-to-all exchange among the group's nodes (every pair of
// the group moves data at once) and is positive when the group holds both ends of a bad link.
// Disjoint groups share no node and no link, so the groups of one round run in parallel. Pure:
// the tester is an interface; tests drive it with a simulated fabric.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "slurm/schedule.h"

namespace fabkit::slurm {

class GroupTester {
 public:
  virtual ~GroupTester() = default;
  // One round: the groups are disjoint; the answer has one entry per group, true = bad link
  // inside the group.
  virtual std::vector<bool> run_round(const std::vector<std::vector<int>>& groups) = 0;
};

struct LinkSearchResult {
  std::optional<NodePair> link;  // the bad link, confirmed by a last test of the pair alone
  // The pair the rounds narrowed to (also when its own test was clean: outcome not_reproduced).
  std::optional<NodePair> narrowed_to;
  int rounds = 0;                // rounds spent (each one call of run_round)
  int group_tests = 0;           // groups tested over all rounds
  std::string outcome;           // found | none (the whole set tested clean) | not_reproduced
};

// candidates: the node indexes to search (at least 2, no duplicates). known_positive: the caller
// already knows the whole set holds a bad link (skips the first round). Throws
// std::invalid_argument on fewer than 2 candidates.
LinkSearchResult find_bad_link(const std::vector<int>& candidates, GroupTester& tester,
                               bool known_positive = false);

// The confirming test of the pair alone is skipped when the last positive two-node group was that
// pair (it would repeat it).
// The worst-case rounds of find_bad_link for n candidates: 1 (the whole set) + 1 per halving while
// the link stays inside one half + ceil(log2) per side once it crosses the halves + 1 (confirm).
int link_search_round_bound(int n);

}  // namespace fabkit::slurm
