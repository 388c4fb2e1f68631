#include "slurm/cluster_report.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "profile/builder.h"
#include "reports/report_render.h"
#include "slurm/drift_judge.h"
#include "slurm/link_search.h"

namespace fabkit::slurm {
namespace {

std::string failed_step(const pair::PairFacts& f) {
  for (const auto& s : f.steps)
    if (s.status == "failed")
      return s.step + (s.host.empty() ? "" : " on " + s.host) + ": " + s.code + ": " + s.error;
  return "";
}

// Warn/fail findings of many reports, one finding per code: the first one's text, and the
// subjects (hosts or pairs) it was seen on.
void fold_findings(const std::vector<std::pair<std::string, const Report*>>& reports,
                   std::vector<Finding>& out) {
  std::map<std::string, std::vector<std::pair<std::string, const Finding*>>> by_code;
  std::vector<std::string> order;
  for (const auto& [where, r] : reports)
    for (const auto& f : r->findings) {
      if (f.severity == Severity::kInfo) continue;
      if (!by_code.count(f.code)) order.push_back(f.code);
      by_code[f.code].push_back({where, &f});
    }
  for (const auto& code : order) {
    const auto& seen = by_code[code];
    Finding f = *seen.front().second;
    std::vector<std::string> wheres;
    for (const auto& [w, _] : seen)
      if (std::find(wheres.begin(), wheres.end(), w) == wheres.end()) wheres.push_back(w);
    f.subject = seen.front().first + ": " + f.subject;
    if (wheres.size() > 1) {
      std::string list;
      for (size_t i = 0; i < wheres.size() && i < 8; ++i) list += (i ? ", " : "") + wheres[i];
      if (wheres.size() > 8) list += " and " + std::to_string(wheres.size() - 8) + " more";
      f.message += " [seen on " + std::to_string(wheres.size()) + ": " + list + "]";
    }
    out.push_back(f);
  }
}

Json opt(const std::optional<double>& v) { return v ? Json(*v) : Json(); }

std::string link_name(const ClusterFacts& f, const NodePair& p) {
  return f.hosts[static_cast<size_t>(p.a)] + "<->" + f.hosts[static_cast<size_t>(p.b)];
}

// The search's verdict: the named link (fail), a link that did not show again (warn), or a clean
// group test of every candidate (info).
void search_findings(const ClusterFacts& f, std::vector<Finding>& out) {
  const SearchFacts& s = f.search;
  if (!s.ran) return;
  char figures[256];
  std::snprintf(figures, sizeof figures,
                "%d rounds, %d group tests (bound %d; a full pair schedule over the %zu nodes: %d rounds); "
                "a group is slow below %.3g Gbit/s",
                s.result.rounds, s.result.group_tests, s.rounds_bound, s.candidates.size(),
                s.full_schedule_rounds, s.threshold_gbit_s.value_or(0));
  if (s.result.outcome == "found") {
    const NodePair& l = *s.result.link;
    const std::string a = f.hosts[static_cast<size_t>(l.a)], b = f.hosts[static_cast<size_t>(l.b)];
    std::string last;
    if (!s.rounds.empty() && !s.rounds.back().empty()) {
      const auto& g = s.rounds.back().front();
      last = g.min_busbw_gbps ? "; the pair alone: ring all-reduce busbw " + std::to_string(*g.min_busbw_gbps * 8) + " Gbit/s"
                              : "; the pair alone: " + g.error;
    }
    out.push_back(fail("cluster.link_search_found", link_name(f, l),
                       "group testing (ring all-reduces of node groups) named the bad link: " + std::string(figures) + last,
                       "check the cable, transceiver and switch ports between " + a + " and " + b +
                           " (`fabcheck pair " + a + " " + b + "` shows the interface pairs); drain one of them "
                           "until it is fixed"));
  } else if (s.result.outcome == "not_reproduced") {
    out.push_back(warn("cluster.link_search_not_reproduced", "search",
                       "the groups narrowed to a pair whose own test was fast: a flaky link, or load that "
                       "came and went: " + std::string(figures),
                       "re-run fabcheck cluster --search; watch the port counters of the nodes the rounds named"));
  } else {
    out.push_back(info("cluster.link_search_clean", "search",
                       "the all-reduce across every searched node was not slow in any ring order: " + std::string(figures)));
  }
}

Json search_json(const ClusterFacts& f) {
  const SearchFacts& s = f.search;
  if (s.trigger.empty()) return nullptr;
  Json rounds = Json::array();
  for (size_t r = 0; r < s.rounds.size(); ++r) {
    Json groups = Json::array();
    for (const auto& g : s.rounds[r]) {
      Json hosts = Json::array();
      for (int n : g.nodes) hosts.push_back(f.hosts[static_cast<size_t>(n)]);
      groups.push_back({{"hosts", hosts}, {"positive", g.positive}, {"rings", g.rings},
                        {"min_busbw_gbps", opt(g.min_busbw_gbps)},
                        {"error", g.error.empty() ? Json() : Json(g.error)}, {"elapsed_ms", g.elapsed_ms}});
    }
    rounds.push_back({{"groups", groups}, {"elapsed_ms", r < s.round_ms.size() ? s.round_ms[r] : 0.0}});
  }
  Json cands = Json::array();
  for (int n : s.candidates) cands.push_back(f.hosts[static_cast<size_t>(n)]);
  return {{"trigger", s.trigger},
          {"ran", s.ran},
          {"skipped", s.skipped.empty() ? Json() : Json(s.skipped)},
          {"candidates", cands},
          {"bytes", s.bytes},
          {"reference_gbit_s", opt(s.reference_gbit_s)},
          {"threshold_gbit_s", opt(s.threshold_gbit_s)},
          {"outcome", s.ran ? Json(s.result.outcome) : Json()},
          {"link", s.result.link ? Json(link_name(f, *s.result.link)) : Json()},
          {"rounds_used", s.result.rounds},
          {"group_tests", s.result.group_tests},
          {"rounds_bound", s.rounds_bound},
          {"full_schedule_rounds", s.full_schedule_rounds},
          {"elapsed_ms", s.elapsed_ms},
          {"rounds", rounds}};
}

}  // namespace

PairMeasurement measurement_from_pair(const PairRun& run) {
  const auto& f = run.facts;
  PairMeasurement m;
  m.a = run.a;
  m.b = run.b;
  if (!f.chosen_link) {
    m.error = failed_step(f);
    if (m.error.empty()) m.error = "no interface pair between the two hosts accepted a connection";
    return m;
  }
  const auto& link = f.links[*f.chosen_link];
  m.rtt_us = link.rtt_median_us;
  if (f.rdma_rc.status == "ran") {
    std::optional<double> worst;
    std::string reasons;
    for (const auto& p : f.rdma_rc.pairs) {
      if (p.status == "ok" && p.bw_gbps)
        worst = worst ? std::min(*worst, *p.bw_gbps) : *p.bw_gbps;
      else
        reasons +=
            (reasons.empty() ? "" : "; ") + p.ports.hca_a + "<->" + p.ports.hca_b + ": " + p.reason;
    }
    if (!worst) {
      m.error = "rdma_rc: the RC test failed on every rail: " + reasons;
      return m;
    }
    m.ok = true;
    m.gbit_s = worst;
    m.source = "rdma_rc write_bw (slowest rail)";
    return m;
  }
  m.ok = true;
  m.gbit_s = link.single_stream_gbit_s;
  m.source = "tcp single stream " + link.a.ifname + "->" + link.b.ifname;
  return m;
}

std::string nccl_version_of(const std::vector<PairRun>& runs, const std::string& host) {
  for (const auto& r : runs)
    for (const auto& t : r.facts.transports)
      for (size_t rank = 0; rank < t.ranks.size() && rank < 2; ++rank) {
        const std::string& h = rank == 0 ? r.facts.host_a : r.facts.host_b;
        const Json& doc = t.ranks[rank];
        if (h != host || !doc.is_object() || !doc.contains("extra") || !doc["extra"].is_object())
          continue;
        const Json& x = doc["extra"];
        if (x.contains("nccl_log") && x["nccl_log"].is_object() &&
            x["nccl_log"].contains("version") && x["nccl_log"]["version"].is_string())
          return x["nccl_log"]["version"].get<std::string>();
        if (x.contains("nccl_version") && x["nccl_version"].is_number_integer())
          return std::to_string(x["nccl_version"].get<long>());
      }
  return "";
}

std::vector<PairMeasurement> matrix_measurements(const ClusterFacts& f) {
  std::vector<PairMeasurement> ms;
  for (const auto& p : f.pairs) ms.push_back(measurement_from_pair(p));
  for (const auto& rt : f.retests) {
    PairMeasurement again = measurement_from_pair(rt);
    for (auto& m : ms)
      if (m.a == rt.a && m.b == rt.b) {
        m.retested = true;
        m.retest_ok = again.ok;
        m.retest_gbit_s = again.gbit_s;
      }
  }
  return ms;
}

Report build_cluster_report(const ClusterFacts& f, const MatrixOptions& mo) {
  Report r;
  r.kind = "cluster";
  r.generated_at = utc_now_rfc3339();

  // 1. Node checks: the ones that failed to run, then the nodes' own findings by code.
  std::vector<Report> node_reports(f.nodes.size());
  std::vector<std::pair<std::string, const Report*>> nodes_with_reports;
  std::vector<NodeDriftFacts> drift;
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const auto& n = f.nodes[i];
    if (!n.ok) {
      r.findings.push_back(
          fail("cluster.node_check_failed", n.host, n.error,
               "run `fabcheck node` on " + n.host +
                   " by hand; check that the "
                   "launcher reaches it and fabcheck is at the same path there (--agent-path)"));
      continue;
    }
    try {
      node_reports[i] = reports::report_from_json(n.report);
      nodes_with_reports.push_back({n.host, &node_reports[i]});
    } catch (const std::invalid_argument& e) {
      r.findings.push_back(fail("cluster.node_check_failed", n.host,
                                "the node report from " + n.host + " is malformed: " + e.what(),
                                "install the same fabcheck version on every node"));
      continue;
    }
    NodeDriftFacts d{n.host, drift_facts_from_node_report(n.report)};
    std::string nccl = nccl_version_of(f.pairs, n.host);
    if (!nccl.empty()) d.values["nccl_version"] = nccl;
    drift.push_back(std::move(d));
  }
  fold_findings(nodes_with_reports, r.findings);

  // 2. Pairs: the matrix judge, then the pair runs' own findings by code.
  std::vector<PairMeasurement> ms = matrix_measurements(f);
  std::vector<std::pair<std::string, const Report*>> pair_reports;
  for (const auto& p : f.pairs) pair_reports.push_back({f.hosts[p.a] + "<->" + f.hosts[p.b], &p.report});
  MatrixVerdict v = judge_matrix(f.hosts, ms, mo);
  r.findings.insert(r.findings.end(), v.findings.begin(), v.findings.end());
  fold_findings(pair_reports, r.findings);

  // 3. Drift between the node reports.
  auto d = judge_drift(drift);
  r.findings.insert(r.findings.end(), d.begin(), d.end());

  // 4. The bad-link search, when it ran.
  search_findings(f, r.findings);

  // The "cluster" section (docs/json/cluster.md).
  Json nodes = Json::array();
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const auto& n = f.nodes[i];
    const auto& s = v.nodes[i];
    Json counts = {{"fail", 0}, {"warn", 0}, {"info", 0}};
    for (const auto& x : node_reports[i].findings)
      counts[to_string(x.severity)] = counts[to_string(x.severity)].get<int>() + 1;
    nodes.push_back({{"host", n.host},
                     {"check", n.ok ? "ok" : "failed"},
                     {"error", n.ok ? Json() : Json(n.error)},
                     {"exit", n.exit},
                     {"elapsed_ms", n.elapsed_ms},
                     {"findings", counts},
                     {"score_gbit_s", opt(s.score_gbit_s)},
                     {"pairs_measured", s.measured},
                     {"pairs_low", s.low},
                     {"pairs_failed", s.failed},
                     {"slow", s.slow}});
  }
  Json pairs = Json::array();
  for (size_t i = 0; i < f.pairs.size(); ++i) {
    const auto& p = f.pairs[i];
    const auto& m = ms[i];
    const auto& l = v.links[i];
    Json chosen, rtt_histogram;
    if (p.facts.chosen_link) {
      const auto& cl = p.facts.links[*p.facts.chosen_link];
      chosen = {{"ifname_a", cl.a.ifname},
                {"addr_a", cl.a.addr},
                {"ifname_b", cl.b.ifname},
                {"addr_b", cl.b.addr}};
      if (cl.rtt_histogram) rtt_histogram = to_json(*cl.rtt_histogram);
    }
    pairs.push_back({{"a", f.hosts[p.a]},
                     {"b", f.hosts[p.b]},
                     {"round", p.round},
                     {"ok", m.ok},
                     {"gbit_s", opt(m.gbit_s)},
                     {"rtt_us", opt(m.rtt_us)},
                     {"rtt_histogram", rtt_histogram},
                     {"source", m.source},
                     {"state", l.state},
                     {"expected_gbit_s", opt(l.expected_gbit_s)},
                     {"error", m.ok ? Json() : Json(m.error)},
                     {"link", chosen},
                     {"elapsed_ms", p.elapsed_ms},
                     {"retested", m.retested},
                     {"retest_gbit_s", opt(m.retest_gbit_s)}});
  }
  Json drift_json = Json::object();
  for (const auto& d2 : drift) drift_json[d2.host] = d2.values;
  auto cost = schedule_cost(f.rounds, static_cast<int>(f.hosts.size()), 0, f.max_parallel);
  Json c = {{"cluster_version", 1},
            {"hosts", f.hosts},
            {"launcher", f.launcher},
            {"plan", to_string(f.plan)},
            {"max_parallel", f.max_parallel},
            {"schedule",
             {{"rounds", cost.rounds},
              {"waves", cost.waves},
              {"pair_runs", cost.pair_runs},
              {"sequential_runs", cost.sequential_runs},
              {"nodes_ms", f.nodes_ms},
              {"pairs_ms", f.pairs_ms},
              {"retest_ms", f.retest_ms},
              {"retest_runs", f.retests.size()},
              {"round_ms", f.round_ms}}},
            {"nodes", nodes},
            {"matrix",
             {{"reference_gbit_s", opt(v.reference_gbit_s)},
              {"slow_fraction", mo.slow_fraction},
              {"pairs", pairs}}},
            {"drift", drift_json},
            {"search", search_json(f)}};
  r.sections.push_back({"cluster", c});
  return r;
}

Report build_plan_report(const std::vector<std::string>& hosts, PairPlan plan, int max_parallel,
                         double per_pair_s) {
  Report r;
  r.kind = "cluster";
  r.generated_at = utc_now_rfc3339();
  const int n = static_cast<int>(hosts.size());
  auto rounds = make_schedule(plan, n);
  auto cost = schedule_cost(rounds, n, per_pair_s, max_parallel);
  auto all = schedule_cost(round_robin(n), n, per_pair_s, max_parallel);
  Json rj = Json::array();
  for (const auto& rd : rounds) {
    Json pairs = Json::array(), idle = Json::array();
    for (const auto& p : rd.pairs) pairs.push_back({hosts[p.a], hosts[p.b]});
    for (int i : rd.idle) idle.push_back(hosts[i]);
    rj.push_back({{"pairs", pairs}, {"idle", idle}});
  }
  r.sections.push_back({"plan",
                        {{"hosts", hosts},
                         {"plan", to_string(plan)},
                         {"max_parallel", max_parallel},
                         {"per_pair_s", per_pair_s},
                         {"rounds", cost.rounds},
                         {"waves", cost.waves},
                         {"pair_runs", cost.pair_runs},
                         {"sequential_runs", cost.sequential_runs},
                         {"estimated_s", cost.seconds},
                         {"sequential_estimated_s", cost.sequential_runs * per_pair_s},
                         {"all_pairs_estimated_s", all.seconds},
                         {"link_search_rounds_bound", n >= 2 ? link_search_round_bound(n) : 0},
                         {"schedule", rj}}});
  return r;
}

profile::Profile cluster_profile(const ClusterFacts& f, const std::string& created_on) {
  std::vector<profile::BuildInput> inputs;
  for (const auto& n : f.nodes) {
    if (!n.ok) continue;
    Report rep = reports::report_from_json(n.report);
    rep.hostname = n.host;
    inputs.push_back({rep, "fabcheck node on " + n.host, false});
  }
  for (const auto& p : f.pairs)
    inputs.push_back({p.report, "fabcheck pair " + f.hosts[p.a] + " " + f.hosts[p.b], false});
  profile::BuildOptions o;
  o.created_on = created_on;
  return profile::build_profile(inputs, o);
}

}  // namespace fabkit::slurm
