#include "cli/plan_option.h"

#include <cstdio>

#include "common/input_file.h"
#include "slurm/search_cost.h"
#include "slurm/topology_conf.h"

namespace fabkit::cli {

void add_plan_options(CLI::App* sub, PlanArgs* a) {
  sub->add_option("--pairs", a->pairs,
                  "auto (default: every pair when that fits --budget, else a ring and shifts that "
                  "cover every node and leaf<->spine path twice), all (round-robin: every pair, "
                  "N-1 rounds) or ring (neighbours, 2-3 rounds)");
  sub->add_option("--budget", a->budget,
                  "Time for the pair rounds (and the search reserve) that --pairs auto plans "
                  "within: 600, 600s, 10m (default), 1h");
  sub->add_option("--topology", a->topology,
                  "Slurm topology.conf (SwitchName=... Nodes=/Switches=): leaves and spines for "
                  "the plan and its coverage (default: unknown)");
  sub->add_option("--per-pair-s", a->per_pair_s,
                  "Seconds one pair run takes, for the plan and its estimate (default " +
                      std::to_string(static_cast<int>(slurm::kDefaultPerPairS)) +
                      "; a real run's matrix.pairs[].elapsed_ms)")
      ->check(CLI::Range(0.01, 3600.0));
}

slurm::ClusterPlan make_cluster_plan(const PlanArgs& a, const std::vector<std::string>& hosts,
                                     int max_parallel, const slurm::SearchPolicy& search,
                                     bool search_forced) {
  slurm::PlanInput in;
  in.pairs = slurm::pair_plan_from_string(a.pairs);
  in.budget_s = slurm::parse_budget_s(a.budget);
  in.nodes = static_cast<int>(hosts.size());
  in.per_pair_s = a.per_pair_s;
  in.max_parallel = max_parallel;
  if (!a.topology.empty()) {
    // topology.conf files run to thousands of lines; 16 MiB is far past any real one.
    std::string text = read_input(
        a.topology, {"--topology", 16u << 20,
                     "give Slurm's topology.conf (SwitchName=... Nodes=... lines)", false});
    in.topology = slurm::topology_for_hosts(slurm::parse_topology_conf(text, a.topology), hosts,
                                            &in.topology_notes);
  }
  in.topology.nodes = in.nodes;
  // The search over every node, by its cost model at the figures measured on netns hosts (the
  // run re-chooses its blocks with the matrix's own bandwidth): an estimate, said as one.
  slurm::SearchPolicy policy = search;
  policy.max_parallel = max_parallel;
  const double search_s =
      in.nodes >= 2 ? slurm::search_cost_s(in.nodes, policy, slurm::RingCostModel{}) : 0;
  if (search_forced) in.search_reserve_s = search_s;
  slurm::ClusterPlan plan = slurm::plan_cluster(in);
  if (plan.coverage.pairs_measured < plan.coverage.pairs_total && !search_forced) {
    char text[64];
    std::snprintf(text, sizeof text, "%.0f s (%.1f min)", search_s, search_s / 60);
    plan.coverage.notes.push_back(
        std::string("--search covers every pair in its group tests: estimated ") + text +
        " at " + std::to_string(in.nodes) +
        " nodes by its cost model (slurm/search_cost.h, figures measured between netns hosts)");
  }
  return plan;
}

}  // namespace fabkit::cli
