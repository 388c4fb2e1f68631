// What a plan of pair rounds measures and what it leaves to the bad-link search: pairs, pairs per
// node (each pair run measures every rail of both nodes: the RC test runs per rail), the
// leaf<->spine paths each direction under the up-routing model of fabric_topology.h, and the
// pairs of leaves that meet. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "slurm/fabric_topology.h"
#include "slurm/schedule.h"

namespace fabkit::slurm {

// A path between a leaf and a spine, one direction: up = leaf -> spine (traffic leaving the
// leaf), down = spine -> leaf (traffic arriving at it).
struct LeafSpinePath {
  int leaf = 0;
  std::string leaf_name;  // from the topology, or "leaf<index>"
  int spine = 0;
  bool up = true;
  int loads = 0;  // directed transfers of the plan's pair runs that cross it
};

struct PlanCoverage {
  int nodes = 0;
  int64_t pairs_measured = 0;
  int64_t pairs_total = 0;  // N(N-1)/2
  int min_pairs_per_node = 0;
  double median_pairs_per_node = 0;
  int nodes_under_2 = 0;  // nodes in fewer than 2 pairs
  int rails = 1;
  // Topology: "unknown" (no leaves), "leaves" (leaves, spines unknown), "leaves+spines".
  std::string topology = "unknown";
  int leaves = 1, spines = 0;
  // Leaf<->spine paths (leaves x spines x 2 directions) and those loaded fewer than 2 times; the
  // first few of them (leaf, then spine, up before down). 0 when the spines are unknown.
  int paths = 0;
  int paths_under_2 = 0;
  std::vector<LeafSpinePath> paths_under_2_first;
  // Unordered pairs of distinct leaves, and those with at least one pair run between them.
  int64_t leaf_pairs = 0;
  int64_t leaf_pairs_met = 0;
  std::vector<std::string> notes;  // plain sentences: what is not covered, and what is assumed
};

inline constexpr size_t kCoverageListed = 8;

// Per directed path (index leaf * spines + spine, then + leaves * spines for down), its loads.
// Both directions of every pair run count: a pair run sends a -> b and b -> a.
std::vector<int> leaf_spine_loads(const std::vector<Round>& rounds, const FabricTopology& t);

PlanCoverage plan_coverage(const std::vector<Round>& rounds, const FabricTopology& t,
                           const std::vector<std::string>& topology_notes = {});

// "leaf3 -> spine 5" (up) or "spine 5 -> leaf3" (down); spines by their D-mod-K index.
std::string path_name(const LeafSpinePath& p);

}  // namespace fabkit::slurm
