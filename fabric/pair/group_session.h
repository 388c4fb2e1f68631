// The cluster search's agents, kept across its rounds. A group test used to start an agent on each
// of its nodes, probe their links and stop them again, and run each of its ring orders in a runner
// of its own: 0.62 s a group and 0.80 s an order on the netns hosts, which made the search at
// 1,024 nodes take half an hour (docs/cluster.md, "Simulator"). Here every candidate's agent is
// started once, the ring over all of them is probed once (each host's address where its ring
// neighbour reached it), and a group test is one request per member: the ring session
// (fabric/allreduce/runners.h, run_fabkit_socket_ring_session) running every order of the group
// over connections made once.
//
// Thread use: run() may be called from several threads at once for disjoint member sets (the
// groups of one search round); start(), keep_alive() and the destructor from one thread alone.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "fabric/pair/group_controller.h"
#include "fabric/pair/group_steps.h"

namespace fabkit::pair {

class GroupSession {
 public:
  // facts_timeout_ms bounds the start's facts step: every agent probes its node at once (the
  // cluster's --node-timeout-ms; 0 = o.timeout_ms).
  GroupSession(std::vector<std::string> hosts, PairOptions o, int facts_timeout_ms = 0);
  ~GroupSession();  // bye to every agent
  GroupSession(const GroupSession&) = delete;
  GroupSession& operator=(const GroupSession&) = delete;

  // Every agent started at once (launch, hello, connect, facts, peers), then the ring of all hosts
  // in their order probed in rounds of disjoint pairs. False when an agent could not start or
  // no address is known for a host: error() names the step, the host and why. A probe that finds
  // no open path does not stop it: that host keeps its first address the others may contact, and
  // the group tests that hold the path measure it (a path that does not open fails their ring).
  bool start();
  const std::string& error() const { return error_; }
  const GroupFacts& facts() const { return f_; }  // start-up steps, probes, addresses

  // One group test: members are host indexes (2 or more, distinct), orders permutations of
  // 0..members-1, each order a sweep of sizes_bytes. The result's hosts, addrs and ifnames are the
  // members'; rings one per order that ran. A member lost earlier (or lost now) fails the test by
  // name.
  GroupFacts run(const std::vector<int>& members, const std::vector<std::vector<int>>& orders,
                 const std::vector<uint64_t>& sizes_bytes);

  // Agents idle (no request) for longer than idle_ms get a cheap request, so their own idle timeout
  // (agent --idle-timeout-ms) does not end them between the rounds that leave them out.
  void keep_alive(int idle_ms);

 private:
  using Clock = std::chrono::steady_clock;
  void choose_addresses(const SessionPeers& peers);

  PairOptions o_;
  GroupFacts f_;
  Agents ag_;
  std::vector<std::string> lost_;  // per host: why its agent is gone ("" while it is not)
  std::vector<Clock::time_point> last_used_;
  std::string error_;
  int facts_timeout_ms_ = 0;
  bool started_ = false;
};

}  // namespace fabkit::pair
