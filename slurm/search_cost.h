// What a group test of the bad-link search costs, and when it is positive. Pure: the runner
// (slurm/search_runner.cc), the planner (its budget) and the fabric simulator apply the same rule.
//
// A ring all-reduce of S bytes over n ranks moves S/n per step in 2(n-1) steps, each costing
// alpha + S/(n B) (the alpha-beta model, e.g. Thakur, Rabenseifner & Gropp, "Optimization of
// Collective Communication Operations in MPICH", IJHPCA 2005; nccl-tests' busbw is the same
// 2(n-1)/n x S / T correction: github.com/NVIDIA/nccl-tests doc/PERFORMANCE.md). Its busbw is
// then (S/n) / (alpha + S/(n B)) = B / (1 + alpha B n / S): a fixed S over a large n is
// latency-bound, and a healthy group reads slow against a bandwidth yardstick. The fix here is
// both: S = n x chunk (the runner's sizing) and the threshold taken from the expected busbw at
// the group's n and S, not from B alone.
#pragma once

#include <cstdint>
#include <optional>

#include "slurm/fabric_search.h"

namespace fabkit::slurm {

// The per-step latency a group test's bar allows for (group_test_threshold_gbit_s): the median
// measured between network-namespace hosts on the 2-core development machine (fabkit-socket over
// veth, the whole group on 2 cores, 4-16 hosts):
//   sudo /usr/bin/python3 bench/search_cost/measure_ring_cost.py
//        --fabcheck build-dev/cli/fabcheck --hosts 4,8,16 --repeat 3
// (a higher alpha lowers the bar: a busy machine's figure would make the search less sensitive).
inline constexpr double kGroupBarAlphaS = 250e-6;

// The figures of the search's cost, for the planner's estimate before anything is measured. All
// of them are fitted (slurm/sim/measured.h, fit_group_model) from one real search over 32 netns
// hosts with the agents kept and one ring session per group test, on this 2-core machine under
// load (bench/cluster/testdata/netns-32-ring-search-session.json; docs/cluster.md, "Cost
// model"): the simulator's group model is the same run, so the estimate and the simulated search
// agree. A real cluster has its own: the run re-chooses its blocks with the matrix's figure.
struct RingCostModel {
  double alpha_s = 600e-6;         // per ring step (latency, wake-up, reduction of a small chunk)
  double bandwidth_Bps = 0.108e9;  // per link, bytes/s (the run's median pair figure, 0.86 Gbit/s)
  // Once per search, per candidate: its agent started and the ring of all candidates probed
  // (pair::GroupSession::start; 3.0 s for 32 hosts, whose agents all start on 2 cores here).
  double agents_start_s_per_host = 0.095;
  // Per group test: the port, one request per member, the mesh of connections (a group of 2
  // alone took 12-25 ms, its ring included).
  double group_s = 0.02;
  // Per ring order in the group's session (fitted: 0.09 s, 8 groups of 4 at once on 2 cores).
  double ring_start_s = 0.09;
  // The bar's fraction (--search-fraction): a positive group's rings move their bytes below it.
  // A fault's tests are priced at a tenth of it (kFaultBelowBar): a bad link sits far below the
  // bar (the tests' shaped links ~100x below healthy), it slows every group test that holds it,
  // and priced at the bar the simulated search at 1,024 nodes overran its estimate.
  double fault_bandwidth_fraction = 0.25;
};
inline constexpr double kFaultBelowBar = 0.1;

// The all-reduce size of a group test of n nodes: policy.fixed_bytes, or n x chunk_bytes.
uint64_t group_test_bytes(int n, const SearchPolicy& policy);

// Seconds of one ring all-reduce of `bytes` over n ranks: 2(n-1)(alpha + bytes/(n B)).
double ring_allreduce_s(int n, double bytes, const RingCostModel& m);

// The busbw (Gbit/s) a healthy ring of n ranks reaches at `bytes` when each link gives
// link_gbit_s: link_gbit_s / (1 + alpha B n / bytes).
double expected_ring_busbw_gbit_s(int n, double bytes, double link_gbit_s, double alpha_s);

// A group test's reading: failed (a ring run or a step failed), the slowest ring's busbw (GB/s,
// as the runners report it), the ranks and the all-reduce size.
struct GroupTestReading {
  bool failed = false;
  std::optional<double> min_busbw_gbps;
  int ranks = 0;
  uint64_t bytes = 0;
};

// The bar (Gbit/s): fraction x the expected busbw of a healthy ring at the group's n and bytes
// when its links give reference_gbit_s (the matrix's median TCP figure).
double group_test_threshold_gbit_s(int n, uint64_t bytes, double reference_gbit_s, double fraction,
                                   double alpha_s);

// The one rule of a group test, for the runner and the simulator: positive when it failed, or
// when the slowest ring's busbw x 8 is below group_test_threshold_gbit_s. A reading with no figure
// and no failure is not positive (a group of one node runs nothing).
bool group_test_positive(const GroupTestReading& r, double reference_gbit_s, double fraction,
                         double alpha_s);

// Seconds of one clean group test of n nodes: the group's overhead, then floor(n/2) ring orders,
// each started and run warmup + iters times (the agents' start is search_cost_s's, once).
double group_test_s(int n, const SearchPolicy& policy, const RingCostModel& m);

// The first stage for n candidates in g blocks: one round of the blocks, then the tournament's
// rounds of block-pair unions; a round is its largest group's test, times the waves when
// policy.max_parallel caps the groups at once.
double search_first_stage_s(int n, int blocks, const SearchPolicy& policy, const RingCostModel& m);

// The blocks (1 .. n/2) whose first stage costs least by the model.
int choose_search_blocks(int n, const SearchPolicy& policy, const RingCostModel& m);

// The cost model of a search whose links give reference_gbit_s (the matrix's TCP figure) at a
// per-step latency alpha_s; the other figures stay the netns-measured defaults.
RingCostModel ring_cost_model(double alpha_s, double reference_gbit_s);
// The policy a search over n candidates runs with: max_parallel groups at once and the
// first-stage blocks fixed (policy.blocks, else choose_search_blocks), clamped as search_fabric
// clamps them. run_search and the simulator both call it, so both search with the same blocks.
SearchPolicy resolve_search_policy(int n, SearchPolicy policy, int max_parallel,
                                   const RingCostModel& m);
// What the planner reserves for the search over n candidates: the agents' start, the first stage
// (at policy.blocks, or choose_search_blocks when 0), then one fault resolved at its worst (the
// bisection's rounds of fabric_search_round_bound, each at the size of the group resolved and
// measured twice, as a positive group is; the pair's repeats and the node test; the re-test), and
// the sweep of the one end taken out (max(1, g) rounds of a block and the end).
double search_cost_s(int n, const SearchPolicy& policy, const RingCostModel& m);

}  // namespace fabkit::slurm
