// A simulated fabric for the cluster planner and the judges (issue #43): N nodes on a two-level
// fat tree (slurm/fabric_topology.h: a leaf per node, spines, rails, D-mod-K up-routing), each
// element a capacity relative to a healthy one (1), faults that lower one element, and pair
// figures drawn as a healthy figure from a measured distribution (a real `fabcheck cluster`
// run's healthy pairs) times the bottleneck of the pair's path both ways. Seeded and
// deterministic: the same seed gives the same figures. Pure: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "slurm/fabric_topology.h"
#include "slurm/matrix_judge.h"
#include "slurm/path_judge.h"

namespace fabkit::slurm::sim {

// xoshiro256** seeded through splitmix64 (https://prng.di.unimi.it/): the same numbers on every
// platform, which the <random> distributions do not promise.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  double uniform();           // [0, 1)
  int below(int n);           // [0, n), n >= 1
  Rng fork(uint64_t stream);  // an independent generator for one part of a run

 private:
  uint64_t s_[4];
};

// nodes_per_leaf nodes per leaf switch (the last leaf may hold fewer), every leaf with one uplink
// to each of `spines` spine switches; leaf names "leaf0", "leaf1", ... Throws
// std::invalid_argument naming a value below 1.
FabricTopology fat_tree(int nodes, int nodes_per_leaf, int spines, int rails);

enum class FaultKind { kNone, kSlowLink, kFlappingLink, kSlowNic, kBadSpinePort };
const char* to_string(FaultKind k);  // none | slow_link | flapping_link | slow_nic | bad_spine_port
std::optional<FaultKind> fault_kind_from_string(const std::string& text);
const std::vector<FaultKind>& all_fault_kinds();

struct Fault {
  FaultKind kind = FaultKind::kNone;
  // slow_link, flapping_link: the pair a < b (what cluster.link_slow names: one node pair's
  // path, e.g. a cable or a shaped route that only their traffic takes). slow_nic: node a, rail
  // `rail`. bad_spine_port: the cable between leaf a and spine b.
  int a = -1, b = -1;
  int rail = 0;
  double factor = 0.01;  // the faulty element's capacity (1 = healthy)
  double p_slow = 0.5;   // flapping_link: the chance that one measurement finds it slow
};

// A fault of this kind at a place drawn from rng. bad_spine_port needs 2+ leaves and spines:
// std::invalid_argument otherwise; so does a link fault with fewer than 2 nodes.
Fault place_fault(FaultKind kind, const FabricTopology& t, Rng& rng, double factor, double p_slow);

class Fabric {
 public:
  // healthy_gbit_s: the measured healthy pair figures (at least 1, all > 0); one draw picks one
  // uniformly, so the simulated noise is the real run's. Throws std::invalid_argument.
  Fabric(FabricTopology t, std::vector<double> healthy_gbit_s, Fault fault);

  const FabricTopology& topology() const { return t_; }
  const Fault& fault() const { return fault_; }
  int nodes() const { return t_.nodes; }
  double healthy_median() const { return median_; }

  // The bottleneck capacity of a<->b on one rail, both directions (1 = healthy); a flapping
  // link draws whether it is slow this time from rng.
  double path_capacity(int a, int b, int rail, Rng& rng) const;
  // Whether the fault lowers a<->b at all (a flapping link: when it flaps), for scoring.
  bool touched(int a, int b) const;
  // Whether the fault lowers a strict majority of node x's pairs (a node blame it explains).
  bool node_touched(int x) const;

  // One pair run: every rail measured (a healthy draw x its path's capacity), the figure the
  // slowest rail's, as the RC test's matrix entry (slurm/cluster_judge.cc).
  PairMeasurement measure_pair(int a, int b, Rng& rng) const;
  // One ring link's figure in a group test (the same draw, over the pair's slowest rail).
  double link_gbit_s(int a, int b, Rng& rng) const;

 private:
  double draw(Rng& rng) const;

  FabricTopology t_;
  std::vector<double> healthy_;
  Fault fault_;
  double median_ = 0;
};

}  // namespace fabkit::slurm::sim
