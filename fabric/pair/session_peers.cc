#include "fabric/pair/session_peers.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace fabkit::pair {
namespace {

std::optional<uint32_t> ipv4_of(const std::string& s) {
  in_addr a{};
  if (::inet_pton(AF_INET, s.c_str(), &a) != 1) return std::nullopt;
  return ntohl(a.s_addr);
}

// 0.0.0.0/8 (this network), 127/8 (loopback), 224/4 (multicast) and 240/4 (reserved, broadcast)
// name no other host: an agent told to connect there would reach itself or everyone.
bool is_unicast(uint32_t a) {
  const uint32_t top = a >> 24;
  return top != 0 && top != 127 && top < 224;
}

uint32_t mask_of(int prefix_len) {
  return prefix_len <= 0 ? 0 : prefix_len >= 32 ? 0xffffffffu : ~((1u << (32 - prefix_len)) - 1);
}

std::string subnet_text(uint32_t addr, int prefix_len) {
  in_addr a{};
  a.s_addr = htonl(addr & mask_of(prefix_len));
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, buf, sizeof buf);
  return std::string(buf) + "/" + std::to_string(prefix_len);
}

// X is on the subnet of one of r's interfaces, and not that subnet's network or broadcast
// address (which name no single host).
bool on_link(uint32_t x, const std::vector<Candidate>& receiver) {
  for (const auto& c : receiver) {
    auto own = ipv4_of(c.addr);
    if (!own || c.prefix_len < 1 || c.prefix_len > 32) continue;
    const uint32_t m = mask_of(c.prefix_len);
    if ((x & m) != (*own & m)) continue;
    if (c.prefix_len <= 30 && ((x & ~m) == 0 || (x & ~m) == ~m)) continue;
    return true;
  }
  return false;
}

std::string subnets_of(const std::vector<Candidate>& receiver) {
  std::string out;
  for (const auto& c : receiver) {
    auto own = ipv4_of(c.addr);
    if (!own || c.prefix_len < 1 || c.prefix_len > 32) continue;
    out += (out.empty() ? "" : ", ") + subnet_text(*own, c.prefix_len);
  }
  return out.empty() ? "none reported" : out;
}

}  // namespace

SessionPeers admit_peers(const std::vector<HostAddresses>& hosts) {
  const size_t n = hosts.size();
  SessionPeers out;
  out.allowed.resize(n);
  // Who the controller vouches for at each address, and who claims it.
  std::map<std::string, std::set<size_t>> vouched_by, claimed_by;
  for (size_t h = 0; h < n; ++h) {
    for (const auto& v : hosts[h].vouched)
      if (auto a = ipv4_of(v); a && is_unicast(*a)) vouched_by[v].insert(h);
    for (const auto& c : hosts[h].claimed) claimed_by[c.addr].insert(h);
  }
  for (size_t h = 0; h < n; ++h) {
    for (const auto& [addr, owners] : vouched_by)
      if (owners.count(h))
        for (size_t r = 0; r < n; ++r)
          if (r != h) out.allowed[r].insert(addr);
    std::set<std::string> seen;
    for (const auto& c : hosts[h].claimed) {
      if (!seen.insert(c.addr).second) continue;
      auto refuse = [&](const std::string& receiver, const std::string& why) {
        out.refused.push_back({hosts[h].host, c.addr, c.ifname, receiver, why});
      };
      const auto x = ipv4_of(c.addr);
      if (!x || !is_unicast(*x)) {
        refuse("", "not a unicast IPv4 host address");
        continue;
      }
      const auto& vouchers = vouched_by[c.addr];
      if (vouchers.count(h)) continue;  // vouched: allowed for every other host above
      if (!vouchers.empty()) {
        refuse("", "it is " + hosts[*vouchers.begin()].host +
                       "'s address (the controller reached that host's agent there or resolved its "
                       "name to it)");
        continue;
      }
      const auto& claimers = claimed_by[c.addr];
      if (claimers.size() > 1) {
        std::string others;
        for (size_t g : claimers)
          if (g != h) others += (others.empty() ? "" : ", ") + hosts[g].host;
        refuse("", "claimed by " + others +
                       " too (an address every host has, like docker0's, names none of them)");
        continue;
      }
      for (size_t r = 0; r < n; ++r) {
        if (r == h) continue;
        if (on_link(*x, hosts[r].claimed)) {
          out.allowed[r].insert(c.addr);
        } else {
          refuse(hosts[r].host, "the controller did not resolve " + hosts[h].host +
                                    "'s name to it nor reach its "
                                    "agent there, and it is not on a subnet of " +
                                    hosts[r].host + "'s interfaces (" +
                                    subnets_of(hosts[r].claimed) + ")");
        }
      }
    }
  }
  return out;
}

HostAddresses host_addresses(const AgentFacts& facts, const std::vector<std::string>& resolved,
                             const std::string& control_addr) {
  HostAddresses h;
  h.host = facts.host;
  h.vouched = resolved;
  if (!control_addr.empty()) h.vouched.push_back(control_addr);
  h.claimed = facts.candidates;
  return h;
}

std::vector<std::vector<std::string>> resolve_ipv4(const std::vector<std::string>& hosts,
                                                   int timeout_ms) {
  struct Lookup {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::vector<std::string> addrs;
  };
  std::vector<std::shared_ptr<Lookup>> lookups;
  for (const auto& host : hosts) {
    auto lookup = std::make_shared<Lookup>();
    lookups.push_back(lookup);
    // Detached: getaddrinfo cannot be cancelled, and a resolver that hangs must not hold the run.
    // The shared state outlives whichever side finishes last.
    std::thread([lookup, host] {
      addrinfo hints{};
      hints.ai_family = AF_INET;
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* res = nullptr;
      std::vector<std::string> addrs;
      if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) == 0) {
        for (addrinfo* p = res; p != nullptr; p = p->ai_next) {
          char buf[INET_ADDRSTRLEN] = {};
          ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(p->ai_addr)->sin_addr, buf,
                      sizeof buf);
          if (std::find(addrs.begin(), addrs.end(), buf) == addrs.end()) addrs.emplace_back(buf);
        }
        ::freeaddrinfo(res);
      }
      std::lock_guard<std::mutex> lock(lookup->mu);
      lookup->addrs = std::move(addrs);
      lookup->done = true;
      lookup->cv.notify_all();
    }).detach();
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::vector<std::vector<std::string>> out;
  for (auto& lookup : lookups) {
    std::unique_lock<std::mutex> lock(lookup->mu);
    lookup->cv.wait_until(lock, deadline, [&] { return lookup->done; });
    out.push_back(lookup->done ? lookup->addrs : std::vector<std::string>{});
  }
  return out;
}

}  // namespace fabkit::pair
