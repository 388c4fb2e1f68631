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

slurm::PlanWithSearch make_cluster_plan(const PlanArgs& a, const std::vector<std::string>& hosts,
                                        int max_parallel, const slurm::SearchPolicy& search,
                                        double search_fraction, slurm::SearchMode mode) {
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
  // The search's estimate is its cost model's at the figures measured on netns hosts (the run
  // re-chooses its blocks with the matrix's own bandwidth): an estimate, said as one.
  slurm::PlanWithSearch planned = slurm::plan_with_search(in, mode, search, search_fraction);
  const double search_s = planned.search_estimate_s;
  auto& cov = planned.plan.coverage;
  const int64_t missing = cov.pairs_total - cov.pairs_measured;
  if (missing > 0) {
    char text[64];
    std::snprintf(text, sizeof text, "%.0f s (%.1f min)", search_s, search_s / 60);
    cov.notes.push_back(
        planned.search_planned
            ? std::string("the bad-link search runs after the matrix and puts every pair in one of "
                          "its group tests, the ") +
                  std::to_string(missing) +
                  " pairs the plan does not measure among them: estimated " + text + " at " +
                  std::to_string(in.nodes) +
                  " nodes by its cost model (slurm/search_cost.h, figures measured between netns "
                  "hosts), kept out of the budget"
            : std::string("--no-search: the ") + std::to_string(missing) +
                  " pairs the plan does not measure are not looked at (the search would cover them "
                  "in an estimated " +
                  text + ")");
  }
  return planned;
}

}  // namespace fabkit::cli
