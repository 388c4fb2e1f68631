// `--topology FILE`: a Slurm topology.conf (topology/tree) as the planner's FabricTopology. Pure:
// the text in, the switches out; the file is read by the CLI. The format is SchedMD's
// topology.conf(5) (https://slurm.schedmd.com/topology.conf.html, tree plugin): one switch a
// line, `SwitchName=leaf1 Nodes=n[001-032]` for a leaf, `SwitchName=spine1 Switches=leaf[1-8]`
// above it, names as Slurm hostlists, parameter names case-insensitive, `#` to the end of the line
// a comment, `LinkSpeed=` accepted and ignored.
#pragma once

#include <string>
#include <vector>

#include "slurm/fabric_topology.h"

namespace fabkit::slurm {

struct TopologySwitch {
  std::string name;
  std::vector<std::string> nodes;     // Nodes=, expanded
  std::vector<std::string> switches;  // Switches=, expanded
  int line = 0;
};

struct TopologyConf {
  std::string path;  // for messages
  std::vector<TopologySwitch> switches;
};

// Throws UsageError "PATH:LINE: <what is wrong> (<the field>); <the fix>" on a line that is not a
// switch of the tree plugin, a bad hostlist, a duplicate switch, a Switches= child that is not
// defined, or a file with no leaf (no Nodes= line).
TopologyConf parse_topology_conf(const std::string& text, const std::string& path);

// The shape the planner needs for these hosts (index = position in hosts): a leaf is a switch
// with Nodes=; the spines are the switches whose Switches= name leaves, counted when every leaf
// hangs off every one of them (a two-level fat tree, what spine_for models), else unknown with a
// note saying why. A host under two leaves (one leaf per rail) takes the first, with a note.
// Throws UsageError naming the hosts that no leaf lists (the first few and how many) and the fix:
// Slurm's tree plugin needs every node under a switch too, and a plan would claim coverage of
// paths it cannot place those hosts on.
FabricTopology topology_for_hosts(const TopologyConf& conf, const std::vector<std::string>& hosts,
                                  std::vector<std::string>* notes);

}  // namespace fabkit::slurm
