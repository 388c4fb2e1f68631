// The bad-link search's cost by the model (slurm/search_cost.h) with its default figures (measured
// on netns hosts, measure_ring_cost.py): per N, the blocks chosen, the first stage, the planner's
// reserve (search_cost_s) and the round bound, with all groups of a round at once and with 32.
//   build-dev/bench/search_cost/search_cost_table [N ...]
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "slurm/fabric_search.h"
#include "slurm/search_cost.h"

int main(int argc, char** argv) {
  using namespace fabkit::slurm;
  std::vector<int> ns = {8, 64, 256, 1024, 4096};
  if (argc > 1) {
    ns.clear();
    for (int i = 1; i < argc; ++i) ns.push_back(std::atoi(argv[i]));
  }
  const RingCostModel m;
  std::printf(
      "model: alpha %.0f us, B %.3f GB/s, agents' start %.3f s/host (once), %.3f s a group, "
      "%.3f s a ring order, chunk %llu KiB\n",
      m.alpha_s * 1e6, m.bandwidth_Bps / 1e9, m.agents_start_s_per_host, m.group_s, m.ring_start_s,
      static_cast<unsigned long long>(SearchPolicy{}.chunk_bytes >> 10));
  std::printf("%6s %10s %7s %14s %14s %14s %7s\n", "N", "parallel", "blocks", "one_group_s",
              "first_stage_s", "reserve_s", "bound");
  for (int n : ns)
    for (int par : {0, 32}) {
      SearchPolicy p;
      p.max_parallel = par;
      p.blocks = choose_search_blocks(n, p, m);
      std::printf("%6d %10s %7d %14.0f %14.0f %14.0f %7d\n", n, par ? "32" : "all", p.blocks,
                  search_first_stage_s(n, 1, p, m), search_first_stage_s(n, p.blocks, p, m),
                  search_cost_s(n, p, m), fabric_search_round_bound(n, p));
    }
  return 0;
}
