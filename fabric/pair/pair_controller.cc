#include "fabric/pair/pair_controller.h"

#include <algorithm>
#include <optional>
#include <set>

#include "fabric/launch/child_process.h"
#include "fabric/pair/agent_client.h"
#include "fabric/pair/pair_steps.h"
#include "fabric/pair/ofi_rdm_step.h"
#include "fabric/pair/rdma_rails.h"
#include "fabric/pair/rdma_rc_plan.h"
#include "fabric/pair/session_peers.h"
#include "fabric/pair/transport_plan.h"
#include "fabric/pair/verdict.h"
#include "fabric/wire/messages.h"
#include "fabric/wire/token.h"

namespace fabkit::pair {
namespace {

void check_port(PairFacts& f, AgentClient& A, AgentClient& B, const PairOptions& o) {
  const auto& l = f.links[*f.chosen_link];
  auto& p = f.rendezvous;
  p.ran = true;
  p.port = o.port;
  p.listen_addr = l.a.addr;
  p.from_addr = l.b.addr;
  p.timeout_ms = std::min(o.timeout_ms, 3000);
  Json lr = A.call("port_listen", {{"addr", p.listen_addr}, {"port", o.port}}, o.timeout_ms);
  p.listen_status = step_answer_field(o.host_a, "port_listen", lr, "status", std::string());
  if (p.listen_status != "listening") {
    p.error = step_answer_field(o.host_a, "port_listen", lr, "error", std::string());
    return;
  }
  Json pr = B.call("port_probe", {{"addr", p.listen_addr}, {"port", o.port}, {"local_addr", p.from_addr},
                                  {"timeout_ms", p.timeout_ms}}, o.timeout_ms + p.timeout_ms);
  p.status = step_answer_field(o.host_b, "port_probe", pr, "status", std::string("error"));
  if (pr["connect_time_us"].is_number()) p.connect_time_us = pr["connect_time_us"].get<double>();
  if (pr["error"].is_string()) p.error = pr["error"].get<std::string>();
  A.call("port_close", Json::object(), o.timeout_ms);
}

void run_transport(PairFacts& f, AgentClient& A, AgentClient& B, const PairOptions& o, const std::string& name) {
  const auto& l = f.links[*f.chosen_link];
  TransportPlan plan = plan_transport(name, f.a, f.b);
  if (!plan.runnable) {
    TransportResult t;
    t.transport = name;
    t.status = "unavailable";
    t.reason = plan.reason;
    f.transports.push_back(t);
    return;
  }
  Json port = A.call("free_port", {{"addr", l.a.addr}}, o.timeout_ms);
  Json args = {{"transport", name},
               {"port", answer_port(o.host_a, "free_port", port)},
               {"sizes_bytes", o.sizes_bytes},
               {"iters", o.iters},
               {"warmup_iters", o.warmup_iters},
               {"timeout_ms", o.timeout_ms},
               {"sweep_timeout_ms", sweep_timeout_ms(o)}};
  Json a0 = args, a1 = args;
  a0.update({{"rank", 0}, {"local_addr", l.a.addr}, {"peer_addr", l.b.addr}, {"ifname", l.a.ifname},
             {"extra", plan.extra_a}});
  a1.update({{"rank", 1}, {"local_addr", l.b.addr}, {"peer_addr", l.a.addr}, {"ifname", l.b.ifname},
             {"extra", plan.extra_b}});
  // Rank 0's agent reports each size as it finishes (a spinner until the first one: rendezvous,
  // connection setup).
  ProgressScope progress(o.progress, "pair: allreduce " + name);
  if (o.progress) a0["progress"] = true;
  A.send("allreduce", a0);
  B.send("allreduce", a1);
  uint64_t shown = 0;
  auto on_size = [&](uint64_t done, uint64_t total) {
    if (shown == 0) progress.set_total(total);
    std::string next = done < o.sizes_bytes.size() ? " " + size_text(o.sizes_bytes[done]) : "";
    progress.advance(done > shown ? done - shown : 0, "pair: allreduce " + name + next);
    shown = std::max(shown, done);
  };
  const std::vector<AgentClient*> ranks = {&A, &B};
  RankAnswers answers = receive_ranks(ranks, o.transport_timeout_ms, on_size);
  f.transports.push_back(combine_ranks(name, answers.docs));
  if (answers.fatal) throw_with_other_ranks(*answers.fatal, ranks, answers.docs);
}

// One mode over one port pair: B serves (listens for the endpoint channel on its chosen address),
// A connects; both requests go out before either answer is awaited, since each side blocks on
// the other. A side that does not answer in its bound is a failed run, not a hang.
RankAnswers run_rc_mode(const RcPortPair& p, const std::string& mode, AgentClient& A,
                        AgentClient& B, const LinkResult& l, const PairOptions& o) {
  Json port = B.call("free_port", {{"addr", l.b.addr}}, o.timeout_ms);
  const uint16_t pn = answer_port(B.host(), "free_port", port);
  B.send("rdma_rc", rc_request_args(p, false, mode, l.b.addr, "", pn, o.timeout_ms, o.rc));
  A.send("rdma_rc", rc_request_args(p, true, mode, l.a.addr, l.b.addr, pn, o.timeout_ms, o.rc));
  return receive_ranks({&A, &B}, rc_answer_bound_ms(mode, o.timeout_ms, o.rc));
}

void run_rdma_rc(PairFacts& f, AgentClient& A, AgentClient& B, const PairOptions& o) {
  const RailPlan plan = plan_rails(f.a.report, f.b.report);
  const auto& pairs = plan.pairs;
  f.rdma_rc.rail_method = plan.method;
  f.rdma_rc.cross_rail_not_applicable = plan.cross_rail_not_applicable;
  f.rdma_rc.unpaired = plan.unpaired;
  f.rdma_rc.plan = o.rc;
  if (pairs.empty()) {
    f.rdma_rc.status = "unavailable";
    f.rdma_rc.reason = "no active RDMA port pair (an ACTIVE HCA port with the same link layer on "
                       "both hosts, from the node reports' rdma section)";
    return;
  }
  f.rdma_rc.status = "ran";
  const auto& l = f.links[*f.chosen_link];
  ProgressScope progress(o.progress, "", 2 * pairs.size());
  for (const auto& p : pairs) {
    const std::string ports = p.hca_a + ":" + std::to_string(p.port_a) + "->" + p.hca_b + ":" +
                              std::to_string(p.port_b);
    progress.advance(0, "pair: rdma rc write bandwidth " + ports);
    RankAnswers bw = run_rc_mode(p, "write_bw", A, B, l, o);
    RankAnswers lat;
    if (!bw.fatal) {
      progress.advance(1, "pair: rdma rc send latency " + ports);
      lat = run_rc_mode(p, "send_lat", A, B, l, o);
    }
    progress.advance(1);
    // Recorded before a lost agent ends the step: the other side's answer stays in the report.
    f.rdma_rc.pairs.push_back(combine_rc(p, Json(bw.docs), Json(lat.docs), o.rc));
    if (bw.fatal) throw_with_other_ranks(*bw.fatal, {&A, &B}, bw.docs);
    if (lat.fatal) throw_with_other_ranks(*lat.fatal, {&A, &B}, lat.docs);
  }
}

}  // namespace

PairFacts run_pair(const PairOptions& o) {
  PairFacts f;
  f.host_a = o.host_a;
  f.host_b = o.host_b;
  f.launcher = o.launcher_text;
  f.timeout_ms = o.timeout_ms;
  f.rendezvous_port = o.port;
  f.transports_skipped = o.transports == std::vector<std::string>{"none"};
  f.rdma_rc.plan = o.rc;  // what was asked, whether or not the test gets to run
  f.ofi_rdm.plan = o.ofi;
  launch::install_stop_handler();
  std::string token = wire::generate_token();
  AgentClient A(o.host_a, token), B(o.host_b, token);
  Json hello_a, hello_b;
  auto both = [&](const std::string& name, auto&& fn) {
    return step(f, name, o.host_a, [&] { fn(A); }) && step(f, name, o.host_b, [&] { fn(B); });
  };
  std::optional<ProgressScope> starting;
  starting.emplace(o.progress, "pair: starting the agents on " + o.host_a + " and " + o.host_b);
  bool ok =
      both("launch", [&](AgentClient& c) { c.launch(agent_command(o, c.host()), o.timeout_ms); });
  ok = ok && step(f, "hello", o.host_a, [&] { hello_a = A.await_hello(o.timeout_ms); }) &&
       step(f, "hello", o.host_b, [&] { hello_b = B.await_hello(o.timeout_ms); });
  ok = ok && both("connect", [&](AgentClient& c) {
         c.connect(o.timeout_ms);
         c.set_liveness_ms(liveness_bound_ms(o));
       });
  ok = ok && step(f, "facts", "", [&] {
         A.send("facts", Json::object());
         B.send("facts", Json::object());
         const Json facts_a = A.receive(o.timeout_ms);
         const Json facts_b = B.receive(o.timeout_ms);
         // A wrong-typed answer fails this step (the report is still written).
         AgentFacts a = agent_facts(o.host_a, hello_a, facts_a);
         f.b = agent_facts(o.host_b, hello_b, facts_b);
         f.a = std::move(a);
       });
  SessionPeers peers;
  ok = ok && step(f, "peers", "", [&] {
         peers = send_session_peers({&A, &B}, {f.a, f.b}, o);
         f.refused_addresses = peers.refused;
       });
  starting.reset();
  ok = ok && step(f, "reachability", "",
                  [&] { measure_links(f, A, B, o, peers.allowed[0], peers.allowed[1]); });
  if (ok) f.chosen_link = choose_link(f.links);
  if (ok && f.chosen_link) {
    // From here on a failed step cancels nothing but itself: a rendezvous port that is blocked,
    // a transport whose runner crashed or failed (the agents run each in a child process,
    // fabric/agent/transport_child.h) leave the other measurements to run. Only a lost agent
    // (killed, unresponsive, out of step with the controller) ends the session, and every step
    // left is recorded as skipped, naming that agent and how it was lost.
    std::string lost;
    auto run = [&](const std::string& name, auto&& fn) {
      if (!lost.empty()) {
        f.steps.push_back({name, "", "skipped", "", lost, 0});
        return false;
      }
      const bool done = step(f, name, "", fn);
      if (!done && ends_session(f.steps.back())) lost = lost_agent_note(f.steps.back());
      return done;
    };
    run("port_check", [&] {
      ProgressScope p(o.progress, "pair: rendezvous port " + std::to_string(o.port));
      check_port(f, A, B, o);
    });
    // The RDMA RC test before the all-reduces: on an RDMA pair it is the measurement that matters
    // most, it needs nothing but verbs, and the all-reduce runners load third-party libraries
    // (Gloo, NCCL) that have crashed agents on real RoCE (issue 37: Gloo's ibverbs transport
    // aborted on soft-RoCE). Whatever they do, the RDMA figure is already in the report; and its
    // QPs are gone before Gloo or NCCL open the same device.
    if (!run("rdma_rc", [&] { run_rdma_rc(f, A, B, o); }) && f.rdma_rc.reason.empty())
      f.rdma_rc.reason = lost.empty() ? "the step failed: " + f.steps.back().error : lost;
    // The RDM test over libfabric next, for the same reason: before Gloo and NCCL load, and in
    // a runner child on each agent (a provider that aborts costs this step only).
    if (!run("ofi_rdm", [&] { run_ofi_rdm_step(f, A, B, o); }) && f.ofi_rdm.reason.empty())
      f.ofi_rdm.reason = lost.empty() ? "the step failed: " + f.steps.back().error : lost;
    std::vector<std::string> names;
    for (const auto& t : f.a.transports)
      if (std::find(f.b.transports.begin(), f.b.transports.end(), t) != f.b.transports.end() &&
          (o.transports.empty() || std::find(o.transports.begin(), o.transports.end(), t) != o.transports.end()))
        names.push_back(t);
    for (const auto& n : names) run("allreduce:" + n, [&] { run_transport(f, A, B, o, n); });
  } else if (ok) {
    f.rdma_rc.reason = "no reachable interface pair for the agents' endpoint exchange";
    f.ofi_rdm.reason = f.rdma_rc.reason;
  } else {
    f.rdma_rc.reason = "not run: " + first_failure(f.steps);
    f.ofi_rdm.reason = f.rdma_rc.reason;
  }
  // Orderly end in every case: bye, then the process groups are stopped (~AgentClient too).
  step(f, "bye", "", [&] {
    A.bye();
    B.bye();
  });
  return f;
}

}  // namespace fabkit::pair
