// A bad leaf<->spine cable (or switch port) judged from the pair matrix and the fabric's shape:
// every pair whose route crosses it is slow, in both directions of the pair run, while the pairs
// around it are not. The matrix judge alone sees such a fault as many slow links, or as a node
// slow against every peer (the node whose index the D-mod-K routing sends down that cable, when
// most of its peers sit on other leaves). Pure: the matrix verdict and the topology in, findings
// out (code cluster.spine_path_slow, docs/findings/cluster.md).
//
// The routes are slurm/fabric_topology.h's spine_for (destination-based D-mod-K, as OpenSM's
// ftree engine routes a two-level tree): a pair a<->b on different leaves loads the cables
// (leaf(a), spine_for(a,b)), (leaf(b), spine_for(a,b)) one way and (leaf(b), spine_for(b,a)),
// (leaf(a), spine_for(b,a)) the other.
#pragma once

#include <string>
#include <vector>

#include "common/finding.h"
#include "slurm/fabric_topology.h"
#include "slurm/matrix_judge.h"

namespace fabkit::slurm {

struct SpinePath {
  int leaf = 0, spine = 0;
  bool operator==(const SpinePath& o) const { return leaf == o.leaf && spine == o.spine; }
};

// The distinct leaf<->spine cables a pair run loads (none when both nodes share a leaf or the
// spines are unknown).
std::vector<SpinePath> pair_spine_paths(const FabricTopology& t, int a, int b);

struct SpinePathVerdict {
  SpinePath path;
  int crossing = 0;        // measured pairs routed through it
  int slow = 0;            // of which slow or failed (link state slow, failed or node)
  std::vector<int> nodes;  // the nodes of its slow pairs, ascending
};

struct PathJudgement {
  std::vector<SpinePathVerdict> slow_paths;  // named, most slow pairs first
  std::vector<Finding> findings;
};

// A cable is named when at least 2 of the pairs crossing it are slow, a strict majority of those
// measured through it are (noise on one pair is not a cable), and its slow pairs do not all share
// one node (then the node, or its NIC, explains them: the matrix judge's call). Named greedily,
// most slow pairs first; the slow pairs a named cable explains no longer count for the others.
// A cable is not named when another one with a slow majority carries every one of its slow pairs
// too: the measured pairs cannot tell the two apart.
// v must be judge_matrix's verdict on the same hosts; nothing is named without spines.
PathJudgement judge_spine_paths(const std::vector<std::string>& hosts, const FabricTopology& t,
                                const MatrixVerdict& v);

// "leaf3<->spine5" (the leaf's name when the topology has names).
std::string spine_path_name(const FabricTopology& t, const SpinePath& p);

}  // namespace fabkit::slurm
