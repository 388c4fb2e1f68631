#include "fabric/pair/group_session.h"

#include <algorithm>
#include <numeric>

#include "fabric/pair/pair_steps.h"

namespace fabkit::pair {

GroupSession::GroupSession(std::vector<std::string> hosts, PairOptions o, int facts_timeout_ms)
    : o_(std::move(o)), facts_timeout_ms_(facts_timeout_ms) {
  f_.hosts = std::move(hosts);
  f_.launcher = o_.launcher_text;
  f_.timeout_ms = o_.timeout_ms;
  lost_.assign(f_.hosts.size(), "");
  last_used_.assign(f_.hosts.size(), Clock::now());
}

GroupSession::~GroupSession() {
  for (auto& a : ag_) a->bye();
}

void GroupSession::choose_addresses(const SessionPeers& peers) {
  const size_t n = f_.hosts.size();
  f_.addrs.assign(n, "");
  f_.ifnames.assign(n, "");
  for (const auto& p : f_.probed) {
    if (!p.chosen) continue;
    const auto& l = p.links[*p.chosen];
    f_.addrs[static_cast<size_t>(p.b)] = l.b.addr;
    f_.ifnames[static_cast<size_t>(p.b)] = l.b.ifname;
  }
  // A host no probe reached: its first candidate another agent may contact (session_peers.h).
  for (size_t h = 0; h < n; ++h) {
    if (!f_.addrs[h].empty()) continue;
    for (const auto& c : f_.agents[h].candidates) {
      bool allowed = false;
      for (size_t o = 0; o < n && !allowed; ++o)
        allowed = o != h && peers.allowed[o].count(c.addr) > 0;
      if (allowed) {
        f_.addrs[h] = c.addr;
        f_.ifnames[h] = c.ifname;
        break;
      }
    }
    if (f_.addrs[h].empty())
      throw StepError(f_.hosts[h], "pair.no_reachable_link",
                      "no address of " + f_.hosts[h] + " that the other agents may contact");
  }
}

bool GroupSession::start() {
  const size_t n = f_.hosts.size();
  SessionPeers peers;
  bool ok = n >= 2 && start_group_agents(f_, ag_, o_, &peers, facts_timeout_ms_);
  if (ok) {
    std::vector<int> ring(n);
    std::iota(ring.begin(), ring.end(), 0);
    probe_ring_neighbours(f_, ag_, o_, peers, ring);  // a failed probe: see choose_addresses
    ok = step(f_.steps, "ring", "", [&] { choose_addresses(peers); });
  }
  for (const auto& s : f_.steps)
    if (s.status == "failed" && s.step != "reachability" && error_.empty())
      error_ = "step '" + s.step + "' failed" + (s.host.empty() ? "" : " on " + s.host) + " (" +
               s.code + "): " + s.error;
  if (n < 2) error_ = "a group session needs 2 hosts or more";
  started_ = ok && error_.empty();
  last_used_.assign(n, Clock::now());
  return started_;
}

GroupFacts GroupSession::run(const std::vector<int>& members,
                             const std::vector<std::vector<int>>& orders,
                             const std::vector<uint64_t>& sizes_bytes) {
  const size_t m = members.size();
  GroupFacts g;
  g.launcher = f_.launcher;
  g.timeout_ms = f_.timeout_ms;
  for (int h : members) {
    g.hosts.push_back(f_.hosts[static_cast<size_t>(h)]);
    g.addrs.push_back(f_.addrs.empty() ? "" : f_.addrs[static_cast<size_t>(h)]);
    g.ifnames.push_back(f_.ifnames.empty() ? "" : f_.ifnames[static_cast<size_t>(h)]);
  }
  const std::string name = "fabkit-socket";
  step(g.steps, "allreduce:" + name, "", [&] {
    if (!started_)
      throw StepError("", "pair.agent_error", "the group session did not start: " + error_);
    for (int h : members)
      if (!lost_[static_cast<size_t>(h)].empty())
        throw StepError(f_.hosts[static_cast<size_t>(h)], "pair.agent_lost",
                        lost_[static_cast<size_t>(h)]);
    std::vector<AgentClient*> ranks;
    for (int h : members) ranks.push_back(ag_[static_cast<size_t>(h)].get());
    Json ring = Json(g.addrs);
    // Every order runs a sweep: the controller's bound and the agent's grow with them.
    const int64_t sweeps = static_cast<int64_t>(std::max<size_t>(1, orders.size()));
    const int wait_ms = static_cast<int>(
        std::min<int64_t>(int64_t{o_.transport_timeout_ms} * sweeps, int64_t{60} * 60 * 1000));
    PairOptions bounded = o_;
    bounded.transport_timeout_ms = wait_ms;
    bounded.sizes_bytes = sizes_bytes;
    std::vector<Json> docs;
    // As run_ring_transport: the port comes from the first member's host; a rank elsewhere that
    // finds it taken fails the session before any data moves, which is repeated on a fresh port.
    for (int attempt = 0; attempt < 3; ++attempt) {
      Json port = ranks[0]->call("free_port", {{"addr", g.addrs[0]}}, o_.timeout_ms);
      for (size_t r = 0; r < m; ++r)
        ranks[r]->send("allreduce", {{"transport", name},
                                     {"port", answer_port(g.hosts[0], "free_port", port)},
                                     {"sizes_bytes", sizes_bytes},
                                     {"iters", o_.iters},
                                     {"warmup_iters", o_.warmup_iters},
                                     {"timeout_ms", o_.timeout_ms},
                                     {"sweep_timeout_ms", sweep_timeout_ms(bounded)},
                                     {"world_size", m},
                                     {"rank", r},
                                     {"ring_addrs", ring},
                                     {"ring_orders", orders},
                                     {"local_addr", g.addrs[r]},
                                     {"peer_addr", g.addrs[(r + 1) % m]},
                                     {"ifname", g.ifnames[r]}});
      RankAnswers answers = receive_ranks(ranks, wait_ms, nullptr);
      for (int h : members) last_used_[static_cast<size_t>(h)] = Clock::now();
      docs = answers.docs;
      if (answers.fatal) {
        for (size_t r = 0; r < m; ++r)
          if (ranks[r]->host() == answers.fatal->host())
            lost_[static_cast<size_t>(members[r])] = answers.fatal->what();
        throw_with_other_ranks(*answers.fatal, ranks, docs);
      }
      if (!a_rank_found_the_port_taken(docs)) break;
    }
    // Order k's answer from every rank; a rank whose session failed before order k has none, and
    // stands in with its session's status and reason (the order did not run there).
    for (size_t k = 0; k < orders.size(); ++k) {
      std::vector<Json> per_rank;
      bool any = false;
      for (const Json& d : docs) {
        const Json* o = nullptr;
        if (d.is_object() && d.contains("orders") && d["orders"].is_array() &&
            k < d["orders"].size())
          o = &d["orders"][k];
        any = any || o != nullptr;
        if (o) {
          per_rank.push_back(*o);
        } else {
          Json stand_in = {{"status", "failed"}, {"reason", "the answer is not a JSON object"}};
          if (d.is_object())
            for (const char* key : {"status", "reason"})
              if (d.contains(key) && d[key].is_string()) stand_in[key] = d[key];
          per_rank.push_back(stand_in);
        }
      }
      if (!any) break;  // no rank ran it: the session failed before (its reason is below)
      g.rings.push_back({orders[k], {combine_ranks(name, per_rank)}});
    }
    if (g.rings.size() < orders.size()) {
      TransportResult t = combine_ranks(name, docs);
      throw StepError("", "pair.transport_failed",
                      std::to_string(g.rings.size()) + " of " + std::to_string(orders.size()) +
                          " ring orders ran: " + (t.reason.empty() ? t.status : t.reason));
    }
  });
  return g;
}

void GroupSession::keep_alive(int idle_ms) {
  if (!started_) return;
  const auto now = Clock::now();
  for (size_t h = 0; h < ag_.size(); ++h) {
    if (!lost_[h].empty() || now - last_used_[h] < std::chrono::milliseconds(idle_ms)) continue;
    try {
      ag_[h]->call("transports", Json::object(), o_.timeout_ms);
      last_used_[h] = Clock::now();
    } catch (const StepError& e) {
      lost_[h] = e.what();
    }
  }
}

}  // namespace fabkit::pair
