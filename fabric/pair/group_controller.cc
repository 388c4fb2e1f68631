#include "fabric/pair/group_controller.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <exception>
#include <set>
#include <system_error>
#include <thread>

#include "fabric/launch/child_process.h"
#include "fabric/pair/agent_client.h"
#include "fabric/pair/group_steps.h"
#include "fabric/pair/pair_steps.h"
#include "fabric/pair/session_peers.h"
#include "fabric/pair/transport_plan.h"
#include "fabric/pair/verdict.h"
#include "fabric/wire/token.h"

namespace fabkit::pair {

// Host b's address is where its left neighbour reached it; its own sends to its right neighbour
// leave from that address too (the ring binds one address per rank), so that link must be open.
void choose_ring_addrs(GroupFacts& f) {
  const size_t n = f.hosts.size();
  f.addrs.assign(n, "");
  f.ifnames.assign(n, "");
  for (const auto& p : f.probed) {
    if (!p.chosen)
      throw StepError("", "pair.no_reachable_link",
                      "no open interface pair from " + f.hosts[p.a] + " to " + f.hosts[p.b]);
    const auto& l = p.links[*p.chosen];
    f.addrs[p.b] = l.b.addr;
    f.ifnames[p.b] = l.b.ifname;
  }
  for (const auto& p : f.probed) {
    bool open = false;
    for (const auto& l : p.links)
      open = open || (l.status == "open" && l.a.addr == f.addrs[p.a] && l.b.addr == f.addrs[p.b]);
    if (!open)
      throw StepError("", "pair.ring_unreachable",
                      f.hosts[p.a] + " " + f.addrs[p.a] + " cannot reach " + f.hosts[p.b] + " " +
                          f.addrs[p.b] +
                          " (each rank sends from the address its left neighbour reached it on)");
  }
}

namespace {

// The RDMA transports need one HCA port per host that suits both neighbours: each neighbour
// pair's plan must pick the same port for the host they share.
TransportPlan plan_ring(const std::string& name, const GroupFacts& f, const std::vector<int>& order,
                        std::vector<Json>* extra) {
  const size_t n = order.size();
  extra->assign(n, Json::object());
  if (name.rfind("nccl-", 0) == 0)
    return {false,
            "the NCCL runner's rendezvous (fabric/nccl_runner) joins 2 ranks; an N-host NCCL run "
            "is not "
            "implemented, run fabcheck pair on 2 hosts for NCCL figures",
            {},
            {}};
  if (!is_rdma_transport(name)) return {};
  for (size_t r = 0; r < n; ++r) {
    int a = order[r], b = order[(r + 1) % n];
    TransportPlan p = plan_transport(name, f.agents[a], f.agents[b]);
    if (!p.runnable) return p;
    for (auto [h, x] : {std::pair<int, Json*>{a, &p.extra_a}, {b, &p.extra_b}}) {
      Json& mine =
          (*extra)[static_cast<size_t>(std::find(order.begin(), order.end(), h) - order.begin())];
      if (!mine.empty() && mine.value("hca", "") != x->value("hca", ""))
        return {false,
                "no single HCA port on " + f.hosts[h] + " suits both ring neighbours (" +
                    mine.value("hca", "") + " vs " + x->value("hca", "") + ")",
                {},
                {}};
      mine = *x;
    }
  }
  return {};
}

// on_size: rank 0's progress notes (sizes done, total), asked for only when o.progress is set.
TransportResult run_ring_transport(GroupFacts& f, Agents& ag, const PairOptions& o,
                                   const std::string& name, const std::vector<int>& order,
                                   const std::function<void(uint64_t, uint64_t)>& on_size) {
  const size_t n = order.size();
  std::vector<Json> extra;
  TransportPlan plan = plan_ring(name, f, order, &extra);
  if (!plan.runnable) {
    TransportResult t;
    t.transport = name;
    t.status = "unavailable";
    t.reason = plan.reason;
    return t;
  }
  Json ring = Json::array();
  for (int h : order) ring.push_back(f.addrs[h]);
  // Every rank listens on the same port number, each on its own host, but free_port can only ask
  // rank 0's host: on another host the port may be taken (an outgoing connection's ephemeral port
  // from the previous ring order, seen in the 16-node search runs). A rank that cannot bind fails
  // the run before any data moves; the run is then repeated on a fresh port, at most twice more.
  TransportResult result;
  for (int attempt = 0; attempt < 3; ++attempt) {
    Json port = ag[order[0]]->call("free_port", {{"addr", f.addrs[order[0]]}}, o.timeout_ms);
    Json args = {{"transport", name},
                 {"port", answer_port(f.hosts[order[0]], "free_port", port)},
                 {"sizes_bytes", o.sizes_bytes},
                 {"iters", o.iters},
                 {"warmup_iters", o.warmup_iters},
                 {"timeout_ms", o.timeout_ms},
                 {"sweep_timeout_ms", sweep_timeout_ms(o)},
                 {"world_size", n},
                 {"ring_addrs", ring}};
    for (size_t r = 0; r < n; ++r) {
      Json a = args;
      int h = order[r];
      a.update({{"rank", r},
                {"local_addr", f.addrs[h]},
                {"peer_addr", f.addrs[order[(r + 1) % n]]},
                {"ifname", f.ifnames[h]},
                {"extra", extra[r]}});
      if (r == 0 && o.progress) a["progress"] = true;
      ag[h]->send("allreduce", a);
    }
    // All requests are out before any answer is awaited: every rank blocks on its neighbours.
    std::vector<AgentClient*> ranks;
    for (size_t r = 0; r < n; ++r) ranks.push_back(ag[order[r]].get());
    RankAnswers answers = receive_ranks(ranks, o.transport_timeout_ms, on_size);
    const std::vector<Json>& docs = answers.docs;
    const bool port_taken = a_rank_found_the_port_taken(docs);
    result = combine_ranks(name, docs);
    result.port_attempts = attempt + 1;
    if (answers.fatal) {
      f.rings.back().transports.push_back(result);  // what every rank reported stays in the report
      throw_with_other_ranks(*answers.fatal, ranks, docs);
    }
    if (!port_taken) break;
  }
  return result;
}

std::vector<std::string> shared_transports(const GroupFacts& f, const PairOptions& o) {
  std::vector<std::string> names;
  for (const auto& t : f.agents[0].transports) {
    bool all = o.transports.empty() ||
               std::find(o.transports.begin(), o.transports.end(), t) != o.transports.end();
    for (const auto& a : f.agents)
      all = all && std::find(a.transports.begin(), a.transports.end(), t) != a.transports.end();
    if (all) names.push_back(t);
  }
  return names;
}

}  // namespace

// The first order's neighbour pairs (first[r] -> first[r+1]) measured in rounds of disjoint
// pairs, the pairs of a round at once (2 rounds, 3 when n is odd). One after the other, a group's
// probes (20 pings and 50 ms of bandwidth each, per interface pair) grew with n: ~100 ms a host
// on the netns bench, minutes at 1,024 hosts before the first ring ran. Disjoint pairs share no
// agent, so each thread talks to its own two. Steps and probed pairs are recorded in r order, up
// to the first round with a failed probe (as the sequential loop stopped at the first failure).
bool probe_ring_neighbours(GroupFacts& f, Agents& ag, const PairOptions& o,
                           const SessionPeers& peers, const std::vector<int>& first) {
  const size_t n = first.size();
  std::vector<std::vector<size_t>> rounds;
  {
    std::vector<std::vector<char>> busy;
    for (size_t r = 0; r < n; ++r) {
      const size_t a = static_cast<size_t>(first[r]), b = static_cast<size_t>(first[(r + 1) % n]);
      size_t k = 0;
      while (k < rounds.size() && (busy[k][a] || busy[k][b])) ++k;
      if (k == rounds.size()) {
        rounds.emplace_back();
        busy.emplace_back(n, 0);
      }
      rounds[k].push_back(r);
      busy[k][a] = busy[k][b] = 1;
    }
  }
  // One progress line per probe from parallel threads would interleave: the round is one step.
  PairOptions quiet = o;
  quiet.progress = nullptr;
  std::vector<ProbedPair> probed(n);
  std::vector<std::vector<StepRecord>> steps(n);
  std::vector<char> measured(n, 0);
  bool ok = true;
  for (const auto& round : rounds) {
    std::vector<char> passed(n, 0);
    std::vector<std::exception_ptr> escaped(n);
    auto probe = [&](size_t r) {
      const int a = first[r], b = first[(r + 1) % n];
      try {
        passed[r] = step(steps[r], "reachability", f.hosts[a] + "->" + f.hosts[b], [&] {
          PairFacts pf;
          pf.a = f.agents[a];
          pf.b = f.agents[b];
          measure_links(pf, *ag[a], *ag[b], quiet, peers.allowed[static_cast<size_t>(a)],
                        peers.allowed[static_cast<size_t>(b)]);
          probed[r] = {a, b, pf.links, choose_link(pf.links)};
        });
        measured[r] = 1;
      } catch (...) {  // not a StepError: rethrown below, as the sequential loop let it out
        escaped[r] = std::current_exception();
      }
    };
    std::vector<std::thread> threads;
    for (size_t r : round) {
      try {
        threads.emplace_back(probe, r);
      } catch (const std::system_error&) {  // no thread to be had: this pair in this thread
        probe(r);
      }
    }
    for (auto& t : threads) t.join();
    for (size_t r : round)
      if (escaped[r]) std::rethrow_exception(escaped[r]);
    for (size_t r : round) ok = ok && passed[r];
    if (!ok) break;
  }
  for (size_t r = 0; r < n; ++r) {
    if (!measured[r]) continue;
    f.steps.insert(f.steps.end(), steps[r].begin(), steps[r].end());
    if (steps[r].back().status == "ok") f.probed.push_back(std::move(probed[r]));
  }
  return ok;
}

bool a_rank_found_the_port_taken(const std::vector<Json>& docs) {
  for (const Json& d : docs) {
    const std::string reason = d.is_object() && d.contains("reason") && d["reason"].is_string()
                                   ? d["reason"].get<std::string>()
                                   : "";
    if (reason.find("bind ") != std::string::npos && reason.find("in use") != std::string::npos)
      return true;
  }
  return false;
}

bool start_group_agents(GroupFacts& f, Agents& ag, const PairOptions& o, SessionPeers* peers,
                        int facts_timeout_ms) {
  const int facts_ms = facts_timeout_ms > 0 ? facts_timeout_ms : o.timeout_ms;
  const size_t n = f.hosts.size();
  launch::install_stop_handler();
  std::string token = wire::generate_token();
  ag.clear();
  for (const auto& h : f.hosts) ag.push_back(std::make_unique<AgentClient>(h, token));
  auto each = [&](const std::string& name, auto&& fn) {
    bool ok = true;
    for (size_t i = 0; ok && i < n; ++i) ok = step(f.steps, name, f.hosts[i], [&] { fn(i); });
    return ok;
  };
  std::vector<Json> hello(n);
  bool ok =
      each("launch", [&](size_t i) { ag[i]->launch(agent_command(o, f.hosts[i]), o.timeout_ms); });
  ok = ok && each("hello", [&](size_t i) { hello[i] = ag[i]->await_hello(o.timeout_ms); });
  ok = ok && each("connect", [&](size_t i) {
         ag[i]->connect(o.timeout_ms);
         ag[i]->set_liveness_ms(liveness_bound_ms(o));
       });
  ok = ok && step(f.steps, "facts", "", [&] {
         for (auto& a : ag) a->send("facts", Json::object());
         std::vector<AgentFacts> got;  // a wrong-typed answer fails this step
         for (size_t i = 0; i < n; ++i)
           got.push_back(agent_facts(f.hosts[i], hello[i], ag[i]->receive(facts_ms)));
         f.agents = std::move(got);
       });
  ok = ok && step(f.steps, "peers", "", [&] {
         std::vector<AgentClient*> agents;
         for (auto& a : ag) agents.push_back(a.get());
         *peers = send_session_peers(agents, f.agents, o);
         f.refused_addresses = peers->refused;
       });
  return ok;
}

std::vector<std::vector<int>> ring_orders_covering_all_pairs(int n) {
  // Walecki: m nodes on a circle (plus the centre when n is odd); zigzag path j, j+1, j-1, j+2,
  // ... j+k for j < k = m/2. The k paths share no edge and together hold every circle edge; the
  // centre closes each into a Hamiltonian cycle, or (n even) the ring closes the path itself.
  const int m = n % 2 ? n - 1 : n, k = m / 2;
  std::vector<std::vector<int>> out;
  if (n < 2) return out;
  for (int j = 0; j < k; ++j) {
    std::vector<int> ring = {j};
    for (int t = 1; t < k; ++t) {
      ring.push_back((j + t) % m);
      ring.push_back(((j - t) % m + m) % m);
    }
    ring.push_back((j + k) % m);
    if (n % 2) ring.push_back(n - 1);
    out.push_back(ring);
  }
  return out;
}

GroupFacts run_group(const GroupOptions& o) {
  const size_t n = o.hosts.size();
  GroupFacts f;
  f.hosts = o.hosts;
  f.launcher = o.pair.launcher_text;
  f.timeout_ms = o.pair.timeout_ms;
  std::vector<std::vector<int>> orders = o.ring_orders;
  if (orders.empty()) {
    orders.emplace_back();
    for (size_t i = 0; i < n; ++i) orders.back().push_back(static_cast<int>(i));
  }
  Agents ag;
  SessionPeers peers;
  std::optional<ProgressScope> starting;
  starting.emplace(o.pair.progress, "group: starting the agents on " + std::to_string(n) + " hosts");
  bool ok = start_group_agents(f, ag, o.pair, &peers);
  starting.reset();
  // Reachability stays pairwise, over the first order's ring neighbours only: n pairs, not
  // n(n-1)/2; later orders reuse the addresses (a pair they cannot join fails its ring run).
  ok = ok && probe_ring_neighbours(f, ag, o.pair, peers, orders[0]);
  ok = ok && step(f.steps, "ring", "", [&] { choose_ring_addrs(f); });
  const auto names = ok ? shared_transports(f, o.pair) : std::vector<std::string>{};
  // One unit per size of every ring run, from rank 0's progress notes: one bar and ETA for all.
  const auto& sizes = o.pair.sizes_bytes;
  ProgressScope rings(o.pair.progress, "", orders.size() * names.size() * sizes.size());
  // A transport that fails (its runner crashed in the agent's child, or it failed by name) does
  // not stop the others; a lost agent ends the session, and the runs left are recorded as
  // skipped with the agent and how it was lost.
  std::string lost;
  for (size_t k = 0; ok && k < orders.size(); ++k) {
    f.rings.push_back({orders[k], {}});
    for (const auto& name : names) {
      if (!lost.empty()) {
        f.steps.push_back({"allreduce:" + name, "", "skipped", "", lost, 0});
        continue;
      }
      const std::string label = "group: ring " + std::to_string(k + 1) + "/" +
                                std::to_string(orders.size()) + " allreduce " + name + " across " +
                                std::to_string(n) + " hosts";
      rings.advance(0, label);
      uint64_t shown = 0;
      auto on_size = [&](uint64_t done, uint64_t) {
        std::string next = done < sizes.size() ? " " + size_text(sizes[done]) : "";
        rings.advance(done > shown ? done - shown : 0, label + next);
        shown = std::max(shown, done);
      };
      if (!step(f.steps, "allreduce:" + name, "", [&] {
            f.rings.back().transports.push_back(
                run_ring_transport(f, ag, o.pair, name, orders[k], on_size));
          }) &&
          ends_session(f.steps.back()))
        lost = lost_agent_note(f.steps.back());
      // A run that reported no sizes (failed early) still counts as done.
      rings.advance(sizes.size() - std::min<uint64_t>(shown, sizes.size()));
    }
  }
  step(f.steps, "bye", "", [&] {
    for (auto& a : ag) a->bye();
  });
  return f;
}

}  // namespace fabkit::pair
