// The "cluster" section of a Report{kind "cluster"} (docs/json/cluster.md) from the gathered
// runs and their judgement, and the "plan" section of --plan-only.
#include "slurm/cluster_document.h"

#include "slurm/cluster_judge.h"
#include "slurm/link_search.h"
#include "slurm/plan_document.h"

namespace fabkit::slurm {
using namespace slurm;  // the facts' types: this file renders nothing else
namespace {

Json opt(const std::optional<double>& v) { return v ? Json(*v) : Json(); }

Json search_json(const ClusterFacts& f) {
  const SearchFacts& s = f.search;
  if (s.trigger.empty()) return nullptr;
  Json rounds = Json::array();
  for (size_t r = 0; r < s.rounds.size(); ++r) {
    Json groups = Json::array();
    for (const auto& g : s.rounds[r]) {
      Json hosts = Json::array();
      for (int n : g.nodes) hosts.push_back(f.hosts[static_cast<size_t>(n)]);
      groups.push_back({{"hosts", hosts},
                        {"positive", g.positive},
                        {"bytes", g.bytes},
                        {"threshold_gbit_s", opt(g.threshold_gbit_s)},
                        {"rings", g.rings},
                        {"min_busbw_gbps", opt(g.min_busbw_gbps)},
                        {"error", g.error.empty() ? Json() : Json(g.error)},
                        {"elapsed_ms", g.elapsed_ms}});
    }
    rounds.push_back(
        {{"groups", groups}, {"elapsed_ms", r < s.round_ms.size() ? s.round_ms[r] : 0.0}});
  }
  Json cands = Json::array();
  for (int n : s.candidates) cands.push_back(f.hosts[static_cast<size_t>(n)]);
  Json faults = Json::array(), link;
  for (const auto& x : s.result.faults) {
    faults.push_back(
        {{"kind", x.kind},
         {"hosts",
          {f.hosts[static_cast<size_t>(x.pair.a)], f.hosts[static_cast<size_t>(x.pair.b)]}},
         {"node", x.node >= 0 ? Json(f.hosts[static_cast<size_t>(x.node)]) : Json()},
         {"positives", x.positives},
         {"repeats", x.repeats},
         {"round", x.round}});
    if (x.kind == "link" && link.is_null()) link = link_name(f, x.pair);
  }
  const SearchPolicy& p = s.policy;
  return {{"trigger", s.trigger},
          {"ran", s.ran},
          {"skipped", s.skipped.empty() ? Json() : Json(s.skipped)},
          {"candidates", cands},
          {"bytes", p.fixed_bytes > 0 ? Json(p.fixed_bytes) : Json()},
          {"chunk_bytes", p.chunk_bytes},
          {"blocks", s.ran ? Json(s.result.blocks) : Json()},
          {"max_links", p.max_links},
          {"repeats", p.repeats},
          {"reference_gbit_s", opt(s.reference_gbit_s)},
          {"threshold_gbit_s", opt(s.threshold_gbit_s)},
          {"outcome", s.ran ? Json(s.result.outcome) : Json()},
          {"link", link},
          {"faults", faults},
          {"stopped_at_cap", s.result.stopped_at_cap},
          {"estimated_s", s.ran ? Json(s.estimated_s) : Json()},
          {"rounds_used", s.result.rounds},
          {"group_tests", s.result.group_tests},
          {"rounds_bound", s.rounds_bound},
          {"full_schedule_rounds", s.full_schedule_rounds},
          {"elapsed_ms", s.elapsed_ms},
          {"agents_start_ms", s.agents_start_ms},
          {"rounds", rounds}};
}

Json link_spread_json(const std::optional<LinkSpread>& s) {
  if (!s) return Json();
  return {{"links", s->links},
          {"sigmas", s->sigmas},
          {"center", s->center},
          {"sigma", s->sigma},
          {"noise_bar", s->noise_bar}};
}

}  // namespace

Report build_cluster_report(const slurm::ClusterFacts& f, const slurm::MatrixOptions& mo,
                            const ClusterPlan* plan) {
  Report r;
  r.kind = "cluster";
  r.generated_at = utc_now_rfc3339();

  const slurm::ClusterJudgement j = slurm::judge_cluster(f, mo);
  r.findings = j.findings;
  const auto& v = j.matrix;
  const auto& ms = j.measurements;

  // The "cluster" section (docs/json/cluster.md).
  Json nodes = Json::array();
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const auto& n = f.nodes[i];
    const auto& s = v.nodes[i];
    Json counts = {{"fail", 0}, {"warn", 0}, {"info", 0}};
    for (const auto& x : j.node_reports[i].findings)
      counts[to_string(x.severity)] = counts[to_string(x.severity)].get<int>() + 1;
    nodes.push_back({{"host", n.host},
                     {"check", n.ok ? "ok" : "failed"},
                     {"error", n.ok ? Json() : Json(n.error)},
                     {"exit", n.exit},
                     {"elapsed_ms", n.elapsed_ms},
                     {"findings", counts},
                     {"gpu_health", j.gpu_health[i] ? to_json(*j.gpu_health[i]) : Json()},
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
                     {"link_rate_gbit_s", opt(m.link_rate_gbit_s)},
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
  for (const auto& d2 : j.drift) drift_json[d2.host] = d2.values;
  auto cost = schedule_cost(f.rounds, static_cast<int>(f.hosts.size()), 0, f.max_parallel);
  Json c = {{"cluster_version", 1},
            {"hosts", f.hosts},
            {"launcher", f.launcher},
            {"plan", plan ? to_string(plan->strategy) : to_string(f.plan)},
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
              {"round_ms", f.round_ms},
              {"planner", plan ? planner_json(*plan) : Json()}}},
            {"nodes", nodes},
            {"matrix",
             {{"reference_gbit_s", opt(v.reference_gbit_s)},
              {"slow_fraction", mo.slow_fraction},
              {"noise_sigmas", mo.noise_sigmas},
              {"link_fraction", v.link_fraction},
              {"link_spread", link_spread_json(v.link_spread)},
              {"pairs", pairs}}},
            {"drift", drift_json},
            {"search", search_json(f)}};
  r.sections.push_back({"cluster", c});
  return r;
}

Report build_plan_report(const std::vector<std::string>& hosts, const ClusterPlan& plan) {
  Report r;
  r.kind = "cluster";
  r.generated_at = utc_now_rfc3339();
  const int n = static_cast<int>(hosts.size());
  const ScheduleCost& cost = plan.cost;
  Json rj = Json::array();
  for (const auto& rd : plan.rounds) {
    Json pairs = Json::array(), idle = Json::array();
    for (const auto& p : rd.pairs) pairs.push_back({hosts[p.a], hosts[p.b]});
    for (int i : rd.idle) idle.push_back(hosts[i]);
    rj.push_back({{"pairs", pairs}, {"idle", idle}});
  }
  const Json pj = planner_json(plan);
  r.sections.push_back({"plan",
                        {{"hosts", hosts},
                         {"pairs", pj["pairs"]},
                         {"plan", pj["plan"]},
                         {"why", pj["why"]},
                         {"max_parallel", plan.max_parallel},
                         {"per_pair_s", plan.per_pair_s},
                         {"budget_s", plan.budget_s},
                         {"search_reserve_s", plan.search_reserve_s},
                         {"rounds", cost.rounds},
                         {"waves", cost.waves},
                         {"pair_runs", cost.pair_runs},
                         {"sequential_runs", cost.sequential_runs},
                         {"estimated_s", cost.seconds},
                         {"total_estimated_s", plan.estimated_s},
                         {"fits_budget", plan.fits_budget},
                         {"sequential_estimated_s", cost.sequential_runs * plan.per_pair_s},
                         {"all_pairs_estimated_s", plan.all_pairs_s},
                         {"link_search_rounds_bound", n >= 2 ? link_search_round_bound(n) : 0},
                         {"shifts", pj["shifts"]},
                         {"coverage", pj["coverage"]},
                         {"schedule", rj}}});
  return r;
}

}  // namespace fabkit::slurm
