// Which addresses each agent of a session may contact, decided by the controller alone and sent
// to every agent once ("set_peers", over its authenticated control connection). An agent refuses
// any request that would make it contact another address (agent.target_not_peer), so this list
// is what keeps a compromised node from pointing its peers at the rest of the network.
//
// An agent's report of its own interfaces is a claim: a compromised node can claim any address.
// The controller vouches for an address of host H only when
//   - it resolved H's name to it itself (getaddrinfo on the controller), or
//   - it reached H's agent there and the agent proved the session token on that connection;
// and it lets agent R contact a claimed address X of H only when X is vouched for H, or X lies on
// a subnet of one of R's own interfaces (R's own report about itself, which only R's honesty is
// at stake in): then the worst a lying H can do is point R at a host on a network R is attached
// to anyway, never at a routed address anywhere. A claim is refused outright when it is not a
// unicast address, is another session host's address, or is claimed by two hosts (docker0's
// 172.17.0.1 on every node). Refusals are reported (pair.peer_address_refused) with the reason.
//
// Pure apart from resolve_ipv4.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "fabric/pair/pair_facts.h"

namespace fabkit::pair {

struct HostAddresses {
  std::string host;
  std::vector<std::string> vouched;  // resolved by the controller; where its agent proved the token
  std::vector<Candidate> claimed;    // the agent's own interfaces, as it reported them
};

struct SessionPeers {
  // allowed[r]: every address agent r may contact, sorted, unique.
  std::vector<std::set<std::string>> allowed;
  std::vector<RefusedAddress> refused;
};

// hosts[i] is agent i. Deterministic: the same facts give the same lists in the same order.
SessionPeers admit_peers(const std::vector<HostAddresses>& hosts);

// What the controller vouches for: resolved (may be empty) and the control address.
HostAddresses host_addresses(const AgentFacts& facts, const std::vector<std::string>& resolved,
                             const std::string& control_addr);

// The IPv4 addresses each host name resolves to on this machine (getaddrinfo, AF_INET), none for
// a name that does not resolve within timeout_ms (all names share the one bound). A name that
// does not resolve is not an error: a launcher template names namespaces or containers, not DNS
// names. Each lookup runs on a thread of its own so a slow resolver cannot hold the run.
std::vector<std::vector<std::string>> resolve_ipv4(const std::vector<std::string>& hosts,
                                                   int timeout_ms);

}  // namespace fabkit::pair
