// The steps of a group test that the one-off group (run_group, group_controller.cc) and the
// cluster search's kept agents (group_session.h) share. Internal to fabric/pair.
#pragma once

#include <memory>
#include <vector>

#include "fabric/pair/agent_client.h"
#include "fabric/pair/group_controller.h"
#include "fabric/pair/session_peers.h"

namespace fabkit::pair {

using Agents = std::vector<std::unique_ptr<AgentClient>>;

// An agent on each of f.hosts (one token for all): launch, hello, connect, facts (f.agents), the
// session's peer addresses (f.refused_addresses). Steps in f.steps; false at the first failed one.
// facts_timeout_ms: the bound on the facts step (every agent's node probe at once), 0 =
// o.timeout_ms.
bool start_group_agents(GroupFacts& f, Agents& ag, const PairOptions& o, SessionPeers* peers,
                        int facts_timeout_ms = 0);

// The neighbour pairs of `first` (an order of f.hosts' indexes) measured in rounds of disjoint
// pairs at once: f.probed and f.steps, up to the first round with a failed probe (false then).
bool probe_ring_neighbours(GroupFacts& f, Agents& ag, const PairOptions& o,
                           const SessionPeers& peers, const std::vector<int>& first);

// Every rank of a ring listens on one port number that only the first rank's host was asked
// for: true when a rank's answer says it could not bind it there (the run is then repeated on a
// fresh port).
bool a_rank_found_the_port_taken(const std::vector<Json>& docs);

// f.addrs / f.ifnames from f.probed: each host's address where its left neighbour reached it.
// Throws StepError (pair.no_reachable_link, pair.ring_unreachable).
void choose_ring_addrs(GroupFacts& f);

}  // namespace fabkit::pair
