// The controller's address book (fabric/pair/session_peers.h): which addresses each agent may
// contact, from what the controller vouches for itself and not from what another agent claims.
// The hostile claims of a compromised node: an outside address on a subnet the peer is not on,
// another host's address, the controller's reach of a third host, addresses every node has, and
// non-unicast addresses.
#include <gtest/gtest.h>

#include "fabric/pair/session_peers.h"

namespace fabkit::pair {
namespace {

Candidate cand(const std::string& ifname, const std::string& addr, int prefix) {
  Candidate c;
  c.ifname = ifname;
  c.addr = addr;
  c.prefix_len = prefix;
  return c;
}

// Two hosts as in the netns tests: fab0 on a shared bridge (where the controller reached each
// agent), slow0 on a subnet both share, dead0 on a subnet of its own.
std::vector<HostAddresses> two_hosts() {
  return {{"h0",
           {"198.18.1.10"},
           {cand("fab0", "198.18.1.10", 24), cand("slow0", "198.18.2.10", 24),
            cand("dead0", "198.18.3.10", 24)}},
          {"h1",
           {"198.18.1.11"},
           {cand("fab0", "198.18.1.11", 24), cand("slow0", "198.18.2.11", 24),
            cand("dead0", "198.18.4.10", 24)}}};
}

bool refused(const SessionPeers& p, const std::string& host, const std::string& addr,
             const std::string& why) {
  for (const auto& r : p.refused)
    if (r.host == host && r.addr == addr && r.reason.find(why) != std::string::npos) return true;
  return false;
}

TEST(SessionPeers, VouchedAndOnLinkAddressesAreAllowedOthersRefusedWithTheReason) {
  SessionPeers p = admit_peers(two_hosts());
  EXPECT_EQ(p.allowed[0], (std::set<std::string>{"198.18.1.11", "198.18.2.11"}));
  EXPECT_EQ(p.allowed[1], (std::set<std::string>{"198.18.1.10", "198.18.2.10"}));
  EXPECT_TRUE(refused(p, "h1", "198.18.4.10",
                      "not on a subnet of h0's interfaces (198.18.1.0/24, 198.18.2.0/24, "
                      "198.18.3.0/24)"));
  EXPECT_TRUE(refused(p, "h0", "198.18.3.10", "not on a subnet of h1's"));
  EXPECT_EQ(p.refused.size(), 2u);
}

// The attack: a compromised h1 reports an address of a host outside the session. It may
// not become a target of h0, however h1 labels it, unless it lies on a network h0 is attached to.
TEST(SessionPeers, ACompromisedHostCannotPointItsPeerAtAnOutsideAddress) {
  auto hosts = two_hosts();
  hosts[1].claimed.push_back(cand("evil0", "10.20.30.40", 8));    // routed, internal network
  hosts[1].claimed.push_back(cand("evil1", "198.18.9.9", 24));    // another subnet
  hosts[1].claimed.push_back(cand("evil2", "198.18.1.10", 24));   // h0's own address
  hosts[1].claimed.push_back(cand("evil3", "127.0.0.1", 8));      // loopback
  hosts[1].claimed.push_back(cand("evil4", "224.0.0.251", 24));   // multicast
  hosts[1].claimed.push_back(cand("evil5", "198.18.1.255", 24));  // h0's bridge broadcast address
  hosts[1].claimed.push_back(cand("evil6", "0.0.0.0", 0));
  SessionPeers p = admit_peers(hosts);
  for (const char* x :
       {"10.20.30.40", "198.18.9.9", "127.0.0.1", "224.0.0.251", "198.18.1.255", "0.0.0.0"})
    EXPECT_EQ(p.allowed[0].count(x), 0u) << x;
  EXPECT_EQ(p.allowed[0], (std::set<std::string>{"198.18.1.11", "198.18.2.11"}));
  EXPECT_TRUE(refused(p, "h1", "10.20.30.40", "not on a subnet of h0's"));
  EXPECT_TRUE(refused(p, "h1", "198.18.1.10", "it is h0's address"));
  EXPECT_TRUE(refused(p, "h1", "127.0.0.1", "not a unicast"));
  EXPECT_TRUE(refused(p, "h1", "224.0.0.251", "not a unicast"));
  EXPECT_TRUE(refused(p, "h1", "198.18.1.255", "not on a subnet"));
}

// An address every node has (docker0) names none of them; a third host's address the controller
// reached or resolved is that host's, whoever else claims it.
TEST(SessionPeers, SharedAndThirdHostAddressesAreRefused) {
  auto hosts = two_hosts();
  hosts.push_back({"h2", {"198.18.1.12"}, {cand("fab0", "198.18.1.12", 24)}});
  for (auto& h : hosts) h.claimed.push_back(cand("docker0", "172.17.0.1", 16));
  hosts[1].claimed.push_back(cand("evil0", "198.18.1.12", 24));
  SessionPeers p = admit_peers(hosts);
  for (const auto& allowed : p.allowed) EXPECT_EQ(allowed.count("172.17.0.1"), 0u);
  EXPECT_TRUE(refused(p, "h0", "172.17.0.1", "claimed by h1, h2 too"));
  EXPECT_TRUE(refused(p, "h1", "198.18.1.12", "it is h2's address"));
  // h2 is still every other host's peer at its own address.
  EXPECT_EQ(p.allowed[0].count("198.18.1.12"), 1u);
  EXPECT_EQ(p.allowed[2].count("198.18.1.12"), 0u);
}

// A routed data address the controller resolved the host's name to is allowed though no peer is
// on its subnet: the operator named it.
TEST(SessionPeers, AResolvedAddressIsAllowedWithoutASharedSubnet) {
  std::vector<HostAddresses> hosts = {
      {"n1",
       {"10.1.0.1", "192.168.0.1"},
       {cand("eth0", "192.168.0.1", 24), cand("ib0", "10.1.0.1", 31)}},
      {"n2",
       {"10.1.0.7", "192.168.0.2"},
       {cand("eth0", "192.168.0.2", 24), cand("ib0", "10.1.0.7", 31)}}};
  SessionPeers p = admit_peers(hosts);
  EXPECT_EQ(p.allowed[0], (std::set<std::string>{"10.1.0.7", "192.168.0.2"}));
  EXPECT_EQ(p.allowed[1], (std::set<std::string>{"10.1.0.1", "192.168.0.1"}));
  EXPECT_TRUE(p.refused.empty());
}

TEST(SessionPeers, HostAddressesVouchForTheControlAddressAndResolvedOnes) {
  AgentFacts f;
  f.host = "n1";
  f.candidates = {cand("eth0", "192.168.0.1", 24)};
  HostAddresses h = host_addresses(f, {"10.1.0.1"}, "192.168.0.1");
  EXPECT_EQ(h.vouched, (std::vector<std::string>{"10.1.0.1", "192.168.0.1"}));
  EXPECT_EQ(h.claimed.size(), 1u);
  // The resolver: a literal resolves to itself; a name that cannot resolve gives nothing, in time.
  auto r = resolve_ipv4({"127.0.0.1", "no-such-host.invalid"}, 2000);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], (std::vector<std::string>{"127.0.0.1"}));
  EXPECT_TRUE(r[1].empty());
}

}  // namespace
}  // namespace fabkit::pair
