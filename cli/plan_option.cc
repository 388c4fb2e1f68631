#include "cli/plan_option.h"

#include "common/input_file.h"
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
                                     int max_parallel) {
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
  return slurm::plan_cluster(in);
}

}  // namespace fabkit::cli
