// The bad-link search at scale: every bad link (up to a cap), a bad node told from a bad link, a
// flaky link told from a bad one, with a first stage whose ring work is O(N^2 / g) instead of the
// O(N^2) of one group test over all N nodes (docs/cluster.md, "Bad-link search").
//
// The model of a group test is link_search.h's: positive when the group holds both ends of a bad
// link, or a bad node and any other node. The rounds:
//  1. First stage: the candidates split into g blocks; one round tests every block; then a
//     round-robin tournament of the blocks (g-1 rounds, g when g is odd) tests the union of every
//     block pair, so every pair of nodes shares exactly one group (its block, or its two blocks'
//     union). A positive block is resolved before the tournament, so a union is positive only
//     through a link that crosses its two blocks.
//  2. A positive group is resolved: bisected to one pair (find_bad_link, known positive), the pair
//     alone tested `repeats` times (every time = bad, sometimes = flaky, never = not reproduced),
//     then each end tested with a node known healthy in one round, one it was in a clean group
//     with where there is one (an end slow with a healthy node is a bad node; with one it was
//     never in a clean group with, only when slow with a second one too). A found pair must not
//     mask the next one, and a group holding both ends of a known bad link is always positive: so
//     one end of the pair (the bad node, for a node) is taken out of the active set, and the group
//     is tested again without it until it is clean.
//  3. The ends taken out are swept at the end: each against every block of the active set (its
//     known partners left out), a removed end and a block at most once per round (max(r, g)
//     rounds for r ends), then the removed ends among themselves, pair by pair.
// Why ends are taken out rather than ring orders that avoid a known bad pair: a group test's
// ring orders are permutations of the whole group (fabric/pair/group_controller.h), and a
// Hamiltonian cycle through the group that avoids a pair leaves that pair's Walecki cycle to be
// re-covered by extra rings; taking one end out costs one sweep of that end at the end instead.
// Pure: the tester is link_search.h's GroupTester.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "slurm/link_search.h"

namespace fabkit::slurm {

struct SearchPolicy {
  // Faults named (links, nodes, flaky links, pairs not reproduced) before the search stops.
  int max_links = 4;
  // Tests of a found pair alone: positive in all = bad, in some = flaky, in none = not reproduced.
  int repeats = 3;
  // First-stage blocks; 0 = choose_search_blocks (the cheapest by the cost model); 1 = one group
  // of every candidate (the search of link_search.h).
  int blocks = 0;
  // A group test's all-reduce size: n x chunk_bytes for a group of n, so every ring step moves a
  // chunk (a fixed size over 1024 ranks is 1/1024 of it per step: latency-bound); fixed_bytes > 0
  // (--search-bytes) gives every group that one size instead.
  uint64_t chunk_bytes = 128u << 10;
  uint64_t fixed_bytes = 0;
  int iters = 3, warmup_iters = 1;
  // Groups of one round at once (the rest wait for a free slot); 0 = all.
  int max_parallel = 0;
  // Each node's leaf switch (index by node, as FabricTopology::leaf_of), empty when unknown. The
  // node test then takes a partner on the end's own leaf first: that pair crosses no spine, so a
  // bad leaf<->spine cable, which slows a node's traffic to some destinations, cannot pass for a
  // bad node.
  std::vector<int> leaf_of;
};

struct SearchFault {
  std::string kind;                // link | node | flaky_link | not_reproduced
  NodePair pair;                   // the pair the rounds narrowed to
  int node = -1;                   // kind node: the bad node (one end of pair)
  int positives = 0, repeats = 0;  // the pair alone: positive in `positives` of `repeats` tests
  int round = 0;                   // the round (1-based) that decided it
};

struct FabricSearchResult {
  std::vector<SearchFault> faults;
  int rounds = 0, group_tests = 0;
  int blocks = 1;
  int bound = 0;                // fabric_search_round_bound for the candidates and policy
  bool stopped_at_cap = false;  // max_links faults named: more may be left
  // found (a link, node or flaky link named) | not_reproduced (only pairs that did not show
  // again) | none (every test of the first stage clean)
  std::string outcome;
};

// candidates: the node indexes (at least 2, no duplicates; throws std::invalid_argument, as for a
// policy with max_links or repeats below 1).
FabricSearchResult search_fabric(const std::vector<int>& candidates, GroupTester& tester,
                                 const SearchPolicy& policy);

// The blocks search_fabric uses for n candidates: policy.blocks (0 taken as 1) clamped to
// [1, n/2] (every block holds 2 nodes or more).
int effective_search_blocks(int n, const SearchPolicy& policy);

// Worst-case rounds of search_fabric for n candidates, g = effective_search_blocks blocks of at
// most m = ceil(n/g) nodes, k = max_links, R = repeats, L(s) = link_search_round_bound(s):
//   1 + rr(g)               the first stage (rr = round-robin rounds: g-1, g when g is odd)
//   + k x (R L(s) + 2)      per fault: a re-test of its group (1), the bisection with the pair's
//                           first test (L(s) - 1 rounds; R(L(s) - 1) when robust, see below), R - 1
//                           more tests of the pair, the node test (1, and 1 more when an end was
//                           slow with a node it was never in a clean group with: a bad node is
//                           slow with a second one too, an end with a second bad link is not)
//   + max(k, g) + rr(k)     the sweep of the k ends taken out, then among themselves
// with s the largest group resolved (n when g = 1, else min(n, 2m)): O(g + R k log(N/g)). After a
// pair that did not show again the next bisection of that group is robust: a clean answer is
// believed only after R clean tests (a flaky link hides in some tests; one clean answer would
// send the halving the wrong way). A bad link never makes the search robust, so it costs
// L(s) + R (+1) rounds.
int fabric_search_round_bound(int n, const SearchPolicy& policy);

}  // namespace fabkit::slurm
