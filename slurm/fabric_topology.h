// The fabric's shape as the cluster planner (slurm/planner.h) and the fabric simulator
// (slurm/sim/) see it: which leaf switch each node hangs off, how many spine switches every leaf
// has an uplink to, and how many rails (fabric NIC ports) a node has. Pure data: read from a Slurm
// topology.conf (`--topology FILE`) or from the node reports; unknown parts stay unknown (no leaf
// = every node on one leaf, spines = 0), and the plan's coverage then says what it could not judge.
#pragma once

#include <string>
#include <vector>

namespace fabkit::slurm {

struct FabricTopology {
  int nodes = 0;
  // Per node (index into the cluster's host list): its leaf's index into leaf_names. Empty when
  // no topology is known: then every node counts as on one leaf.
  std::vector<int> leaf_of;
  std::vector<std::string> leaf_names;
  // Spine switches every leaf has an uplink to (a two-level fat tree). 0 = unknown.
  int spines = 0;
  // Fabric ports per node that a pair run measures one by one (the RC test runs per rail).
  int rails = 1;

  int leaf(int node) const { return leaf_of.empty() ? 0 : leaf_of[static_cast<size_t>(node)]; }
  int leaves() const { return leaf_names.empty() ? 1 : static_cast<int>(leaf_names.size()); }
};

// The spine that traffic from src to dst crosses, or -1 when both sit on one leaf (or the spines
// are unknown). The model is destination-based up-routing (D-mod-K, what OpenSM's ftree and
// up/down engines compute on a two-level tree: the up-port a leaf uses towards a destination is
// fixed by the destination, spread over the up-ports by its index), so a -> b and b -> a cross
// different spines in general, and a pair run, which sends both ways, loads two leaf<->spine
// paths each way. Adaptive routing spreads traffic instead; the planner's coverage says which
// model it assumed.
inline int spine_for(const FabricTopology& t, int src, int dst) {
  if (t.spines <= 0 || t.leaf(src) == t.leaf(dst)) return -1;
  return dst % t.spines;
}

}  // namespace fabkit::slurm
