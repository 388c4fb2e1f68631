#include "slurm/sim/run.h"

#include <algorithm>
#include <stdexcept>

#include "slurm/planner.h"
#include "slurm/search_cost.h"

namespace fabkit::slurm::sim {
namespace {

std::vector<std::string> host_names(int n) {
  std::vector<std::string> h;
  for (int i = 0; i < n; ++i) h.push_back("n" + std::to_string(i));
  return h;
}

bool same(const NodePair& p, int a, int b) {
  return p.a == std::min(a, b) && p.b == std::max(a, b);
}

void score(const Fabric& fab, SimOutcome& o) {
  const Fault& f = fab.fault();
  for (int x : o.blamed_nodes) {
    const bool exact = f.kind == FaultKind::kSlowNic && x == f.a;
    if (exact)
      o.detected = true;
    else if (f.kind != FaultKind::kFlappingLink && fab.node_touched(x))
      o.other_blames++;
    else
      o.false_blames++;
  }
  for (const auto& l : o.blamed_links) {
    const bool link_fault = f.kind == FaultKind::kSlowLink || f.kind == FaultKind::kFlappingLink;
    if (link_fault && same(l, f.a, f.b))
      o.detected = true;
    else if (fab.touched(l.a, l.b))
      o.other_blames++;
    else
      o.false_blames++;
  }
  for (const auto& l : o.flaky_links) {
    if (f.kind == FaultKind::kFlappingLink && same(l, f.a, f.b))
      o.detected = true;
    else if (fab.touched(l.a, l.b))
      o.other_blames++;
    // A healthy link called flaky is a warning, not a blame: noise on the retest is what
    // link_flaky is for. Counted nowhere.
  }
  for (const auto& p : o.blamed_paths) {
    if (f.kind == FaultKind::kBadSpinePort && p.leaf == f.a && p.spine == f.b)
      o.detected = true;
    else
      o.false_blames++;
  }
}

}  // namespace

PlanWithSearch plan_rounds(const SimOptions& o, const FabricTopology& t) {
  PlanInput in;
  in.nodes = t.nodes;
  in.topology = t;
  in.budget_s = o.budget_s;
  in.per_pair_s = o.per_pair_s > 0 ? o.per_pair_s : kDefaultPerPairS;
  in.max_parallel = o.max_parallel;
  if (o.plan == "ring")
    in.pairs = PairPlan::kRing;
  else if (o.plan == "all")
    in.pairs = PairPlan::kAll;
  else if (o.plan != "auto")
    throw std::invalid_argument("unknown plan '" + o.plan + "' (auto, ring or all)");
  const SearchMode mode = !o.search        ? SearchMode::kOff
                          : o.force_search ? SearchMode::kForce
                                           : SearchMode::kAuto;
  return plan_with_search(in, mode, o.group.policy, o.group.fraction);
}

SearchOutcome search_candidates(const std::vector<int>& candidates, GroupTester& tester,
                                const SearchPolicy& policy) {
  FabricSearchResult r = search_fabric(candidates, tester, policy);
  SearchOutcome s;
  s.outcome = r.outcome;
  s.rounds = r.rounds;
  s.group_tests = r.group_tests;
  for (const auto& f : r.faults) {
    if (f.kind == "link") s.bad_links.push_back(f.pair);
    if (f.kind == "node") s.bad_nodes.push_back(f.node);
    if (f.kind == "flaky_link") s.flaky_links.push_back(f.pair);
  }
  return s;
}

SimOutcome simulate_run(const Fabric& fab, const SimOptions& o, uint64_t seed) {
  SimOutcome out;
  const FabricTopology& t = fab.topology();
  const int n = t.nodes;
  out.nodes = n;
  const auto hosts = host_names(n);
  Rng rng(seed);
  Rng measure_rng = rng.fork(1), retest_rng = rng.fork(2), search_rng = rng.fork(3);

  // 1. The plan's rounds, every pair measured once.
  const PlanWithSearch planned = plan_rounds(o, t);
  const auto& rounds = planned.plan.rounds;
  ScheduleCost cost = schedule_cost(rounds, n, o.per_pair_s, o.max_parallel);
  out.plan_rounds = cost.rounds;
  out.plan_waves = cost.waves;
  out.pair_runs = cost.pair_runs;
  out.plan_s = cost.seconds;
  out.node_checks_s = o.node_checks_s;
  std::vector<PairMeasurement> ms;
  ms.reserve(static_cast<size_t>(cost.pair_runs));
  for (const auto& r : rounds)
    for (const auto& p : r.pairs) ms.push_back(fab.measure_pair(p.a, p.b, measure_rng));

  // 2. Re-test, as retest_flagged: judge once, measure the flagged links again.
  if (o.retest) {
    MatrixVerdict first = judge_matrix(hosts, ms, o.matrix);
    std::vector<NodePair> flagged;
    std::vector<size_t> where;
    for (size_t i = 0; i < first.links.size(); ++i)
      if (first.links[i].state == "slow" || first.links[i].state == "failed") {
        flagged.push_back({first.links[i].a, first.links[i].b});
        where.push_back(i);
      }
    auto again = disjoint_rounds(flagged);
    out.retest_waves = schedule_cost(again, n, o.per_pair_s, o.max_parallel).waves;
    out.retest_s = out.retest_waves * o.per_pair_s;
    for (size_t i : where) {
      PairMeasurement m2 = fab.measure_pair(ms[i].a, ms[i].b, retest_rng);
      ms[i].retested = true;
      ms[i].retest_ok = m2.ok;
      ms[i].retest_gbit_s = m2.gbit_s;
    }
  }
  MatrixVerdict v = judge_matrix(hosts, ms, o.matrix);
  for (const auto& f : v.findings) out.codes.push_back(f.code);
  for (int i = 0; i < n; ++i)
    if (v.nodes[static_cast<size_t>(i)].slow) out.blamed_nodes.push_back(i);
  bool trigger = planned.search_planned;
  for (const auto& l : v.links) {
    if (l.state == "slow" || l.state == "failed") {
      out.blamed_links.push_back({l.a, l.b});
      trigger = true;
    }
    if (l.state == "flaky") out.flaky_links.push_back({l.a, l.b});
  }

  // 3. The path judge (the topology is known here).
  PathJudgement pj = judge_spine_paths(hosts, t, v);
  for (const auto& p : pj.slow_paths) out.blamed_paths.push_back(p.path);
  for (const auto& f : pj.findings) out.codes.push_back(f.code);

  // 4. The search, as run_search: candidates are the nodes the matrix does not call slow, held
  // to fraction x the median figure of the healthy ("ok") links.
  if (o.search && trigger) {
    std::vector<int> candidates;
    for (int i = 0; i < n; ++i)
      if (!v.nodes[static_cast<size_t>(i)].slow) candidates.push_back(i);
    std::vector<double> healthy;
    for (size_t i = 0; i < v.links.size(); ++i)
      if (v.links[i].state == "ok" && ms[i].gbit_s) healthy.push_back(*ms[i].gbit_s);
    if (candidates.size() >= 2 && !healthy.empty()) {
      const double reference = median(healthy);
      // The first stage's blocks as run_search chooses them: the cost model with the reference
      // as its bandwidth and the measured per-step latency.
      SearchPolicy policy =
          resolve_search_policy(static_cast<int>(candidates.size()), o.group.policy, o.max_parallel,
                                ring_cost_model(o.group.alpha_s, reference));
      policy.leaf_of = t.leaf_of;  // as run_search does with --topology
      SimGroupTester tester(fab, o.group, reference, search_rng);
      out.search = search_candidates(candidates, tester, policy);
      out.search_ran = true;
      out.search_s = tester.seconds() +
                     o.group.agents_start_s_per_node * static_cast<double>(candidates.size());
      for (const auto& l : out.search.bad_links)
        if (std::none_of(out.blamed_links.begin(), out.blamed_links.end(),
                         [&](const NodePair& b) { return b == l; }))
          out.blamed_links.push_back(l);
      for (int x : out.search.bad_nodes)
        if (std::find(out.blamed_nodes.begin(), out.blamed_nodes.end(), x) ==
            out.blamed_nodes.end())
          out.blamed_nodes.push_back(x);
      for (const auto& l : out.search.flaky_links) out.flaky_links.push_back(l);
      out.codes.push_back(out.search.outcome == "found" ? "cluster.link_search_found"
                          : out.search.outcome == "not_reproduced"
                              ? "cluster.link_search_not_reproduced"
                              : "cluster.link_search_clean");
    }
  }
  out.wall_s = out.node_checks_s + out.plan_s + out.retest_s + out.search_s;
  score(fab, out);
  return out;
}

}  // namespace fabkit::slurm::sim
