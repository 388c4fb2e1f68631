// The bad-link search's group test on the simulated fabric: the group's ring all-reduces (each of
// its Walecki ring orders, pair::ring_orders_covering_all_pairs, as slurm/search_runner.cc runs
// them) in the alpha-beta model, each ring bounded by its slowest link, judged by the command's
// own rule (slurm/group_rule.h). Pure.
//
// A ring all-reduce of S bytes over n ranks takes 2(n-1) steps of S/n bytes (Patarasuk & Yuan,
// "Bandwidth optimal all-reduce algorithms", JPDC 2009; NCCL's ring); with a per-step latency
// alpha and the ring's slowest link B: t = 2(n-1)(alpha + S/(n B)), and NCCL's bus bandwidth
// (nccl-tests doc/PERFORMANCE.md: busbw = algbw x 2(n-1)/n) is busbw = (S/n) / (alpha + S/(n B)).
#pragma once

#include <vector>

#include "slurm/fabric_search.h"
#include "slurm/group_rule.h"
#include "slurm/link_search.h"
#include "slurm/sim/fabric.h"

namespace fabkit::slurm::sim {

struct GroupModel {
  // The command's search policy: a group of n sends n x chunk_bytes (fixed_bytes: --search-bytes),
  // its iterations, repeats, first-stage blocks (0: choose_search_blocks, as run_search).
  SearchPolicy policy;
  double fraction = 0.25;  // --search-fraction
  // Measured (slurm/sim/measured.h fits them from a real run's search rounds):
  double alpha_s = 0;           // one ring step's latency
  double group_overhead_s = 0;  // per group test: the port, the requests, the mesh's connections
  double ring_setup_s = 0;      // per ring order in the group's ring session
  // Once per search, per candidate: the agents started and their ring probed
  // (pair::GroupSession; on the netns machine every agent starts on the same 2 cores).
  double agents_start_s_per_node = 0;
  // One ring run's bound: the controller's transport_timeout_ms (fabric/pair/pair_controller.h,
  // 300 s); a ring still running then is a failed run (the group positive) and costs the bound.
  double ring_timeout_s = 300;
};

// One ring's busbw (GB/s) and wall time (s) for n ranks at slowest link min_gbit_s, at the
// all-reduce size the policy gives a group of n (group_test_bytes).
double ring_busbw_gbps(const GroupModel& m, int n, double min_gbit_s);
double ring_seconds(const GroupModel& m, int n, double min_gbit_s);

class SimGroupTester : public GroupTester {
 public:
  // reference_gbit_s: the matrix's median healthy figure, as run_search takes it; each group is
  // held to the bar of its own size and bytes (group_test_threshold_gbit_s), as the command does.
  SimGroupTester(const Fabric& fabric, const GroupModel& model, double reference_gbit_s, Rng rng);
  std::vector<bool> run_round(const std::vector<std::vector<int>>& groups) override;

  // Per round: its wall time (the slowest group; the groups of a round run at once).
  const std::vector<double>& round_seconds() const { return round_s_; }
  double seconds() const;

 private:
  GroupRunFigure run_once(const std::vector<int>& nodes, double& seconds);

  const Fabric& fabric_;
  GroupModel model_;
  double reference_;
  Rng rng_;
  std::vector<double> round_s_;
};

}  // namespace fabkit::slurm::sim
