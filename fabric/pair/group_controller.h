// `fabcheck pair A B C ...` (3 or more hosts): an agent on each host, the ring neighbours' links
// measured (host i to host i+1 of the first ring order, every candidate interface pair each end
// may contact, session_peers.h), one address per rank, then the all-reduce of every transport the
// agents share across all of them (a ring of N ranks), once per ring order. The cluster's bad-link
// search no longer comes here: it keeps its agents (group_session.h) and runs a group's orders in
// one ring session; no caller now passes ring_orders (the identity is the one order).
// Bounded like the 2-host controller: every step has a deadline; agents get bye, then are stopped.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/report.h"
#include "fabric/pair/pair_controller.h"
#include "fabric/pair/pair_facts.h"

namespace fabkit::pair {

struct GroupOptions {
  std::vector<std::string> hosts;  // rank order of the first ring; 3 or more, distinct
  PairOptions pair;                // launcher, agent path, sizes, iterations, bounds, transports
  // Permutations of 0..n-1; empty = the identity. The addresses come from the first one's links.
  std::vector<std::vector<int>> ring_orders;
};

// The links between one pair of ring neighbours (a = the left host, the client).
struct ProbedPair {
  int a = 0, b = 0;
  std::vector<LinkResult> links;
  std::optional<size_t> chosen;
};

struct RingRun {
  std::vector<int> order;  // host indexes, rank r = hosts[order[r]]
  std::vector<TransportResult> transports;
};

struct GroupFacts {
  std::vector<std::string> hosts;
  std::string launcher;
  int timeout_ms = 0;
  std::vector<AgentFacts> agents;           // host order
  std::vector<ProbedPair> probed;           // the first ring order's neighbour pairs
  std::vector<std::string> addrs, ifnames;  // per host: the address its ranks listen and send on
  std::vector<RingRun> rings;
  std::vector<RefusedAddress>
      refused_addresses;  // claims no agent was let contact (session_peers.h)
  std::vector<StepRecord> steps;
};

GroupFacts run_group(const GroupOptions& o);

// The group's findings: failed steps (by their codes), transports unavailable, failed or wrong.
std::vector<Finding> judge_group(const GroupFacts& f);

// Walecki's decomposition: floor(n/2) ring orders of 0..n-1 such that every pair of nodes is
// adjacent in at least one of them (a ring all-reduce loads only neighbour links, so a group test
// must run all of them to load every link of the group). n >= 2.
std::vector<std::vector<int>> ring_orders_covering_all_pairs(int n);

}  // namespace fabkit::pair
