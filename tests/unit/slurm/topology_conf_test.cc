// `--topology FILE` (slurm/topology_conf.h): Slurm topology.conf text to the planner's
// FabricTopology, and every refusal naming the file, the line, the field and the fix.
#include <gtest/gtest.h>

#include "common/errors.h"
#include "common/hostlist.h"
#include "slurm/topology_conf.h"

namespace fabkit::slurm {
namespace {

// The shape of SchedMD's topology.conf(5) example, scaled: four leaves of four nodes, two
// spines above all of them.
const char* kTwoLevel = R"(# two-level fat tree
SwitchName=leaf1 Nodes=n[01-04] LinkSpeed=200
switchname=leaf2 nodes=n[05-08]   # keys are case-insensitive
SwitchName=leaf3 Nodes=n09,n10,n11,n12

SwitchName=leaf4 Nodes=n[13-16]
SwitchName=spine1 Switches=leaf[1-4]
SwitchName=spine2 Switches=leaf[1-4] LinkSpeed=400
)";

std::string usage_error(const std::string& text, const std::vector<std::string>& hosts = {}) {
  try {
    auto conf = parse_topology_conf(text, "topo.conf");
    std::vector<std::string> notes;
    if (!hosts.empty()) topology_for_hosts(conf, hosts, &notes);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(TopologyConf, LeavesAndSpinesOfATwoLevelTree) {
  auto conf = parse_topology_conf(kTwoLevel, "topo.conf");
  ASSERT_EQ(conf.switches.size(), 6u);
  EXPECT_EQ(conf.switches[1].line, 3);
  EXPECT_EQ(conf.switches[2].nodes, (std::vector<std::string>{"n09", "n10", "n11", "n12"}));
  // An allocation of 6 nodes over three of the leaves, in its own order.
  std::vector<std::string> notes;
  FabricTopology t = topology_for_hosts(conf, {"n14", "n01", "n02", "n05", "n13", "n06"}, &notes);
  EXPECT_EQ(t.nodes, 6);
  EXPECT_EQ(t.leaf_names, (std::vector<std::string>{"leaf1", "leaf2", "leaf4"}));
  EXPECT_EQ(t.leaf_of, (std::vector<int>{2, 0, 0, 1, 2, 1}));
  EXPECT_EQ(t.spines, 2);
  EXPECT_TRUE(notes.empty()) << notes.front();
}

TEST(TopologyConf, SpinesUnknownWhenTheyDoNotReachEveryLeaf) {
  // Two pods: spine1 over leaf1-2, spine2 over leaf3-4, a core above both (three levels).
  const char* pods =
      "SwitchName=leaf1 Nodes=n[1-2]\nSwitchName=leaf2 Nodes=n[3-4]\n"
      "SwitchName=leaf3 Nodes=n[5-6]\nSwitchName=leaf4 Nodes=n[7-8]\n"
      "SwitchName=spine1 Switches=leaf[1-2]\nSwitchName=spine2 Switches=leaf[3-4]\n"
      "SwitchName=core Switches=spine[1-2]\n";
  std::vector<std::string> notes;
  FabricTopology t =
      topology_for_hosts(parse_topology_conf(pods, "pods.conf"), expand_hostlist("n[1-8]"), &notes);
  EXPECT_EQ(t.leaves(), 4);
  EXPECT_EQ(t.spines, 0);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("do not each reach every leaf"), std::string::npos) << notes[0];
  // Leaves alone: spines unknown too, and said so.
  notes.clear();
  t = topology_for_hosts(parse_topology_conf("SwitchName=a Nodes=x[1-2]\n", "f"), {"x1", "x2"},
                         &notes);
  EXPECT_EQ(t.spines, 0);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("spines unknown"), std::string::npos) << notes[0];
}

TEST(TopologyConf, HostUnderTwoLeavesTakesTheFirstWithANote) {
  const char* rails =
      "SwitchName=rail1 Nodes=n[1-4]\nSwitchName=rail2 Nodes=n[1-4]\n"
      "SwitchName=spine Switches=rail[1-2]\n";
  std::vector<std::string> notes;
  FabricTopology t = topology_for_hosts(parse_topology_conf(rails, "rails.conf"),
                                        expand_hostlist("n[1-4]"), &notes);
  EXPECT_EQ(t.leaf_of, (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(t.leaf_names, (std::vector<std::string>{"rail1"}));
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes[0].find("4 hosts are under two leaves in rails.conf (n1 under rail1 (line 1) and "
                          "rail2 (line 2)"),
            std::string::npos)
      << notes[0];
}

TEST(TopologyConf, RefusalsNameFileLineFieldAndFix) {
  struct Case {
    std::string text, needle;
  };
  for (const auto& c : std::vector<Case>{
           {"SwitchName=a Nodes=n1\nSwitchName=b Port=3 Nodes=n2\n",
            "topo.conf:2: unknown field Port=;"},
           {"Nodes=n[1-4]\n", "topo.conf:1: no SwitchName=; each line is `SwitchName=NAME"},
           {"SwitchName=a Nodes=n[1-\n", "topo.conf:1: Nodes=n[1- is not a Slurm hostlist"},
           {"SwitchName=a Nodes=n1\nSwitchName=a Nodes=n2\n",
            "topo.conf:2: SwitchName=a is already defined at line 1"},
           {"SwitchName=a Nodes=n1\nSwitchName=top Switches=a,b\n",
            "topo.conf:2: Switches= names b, which no SwitchName= line defines"},
           {"BlockName=b1 Nodes=n[1-4]\n", "topo.conf:1: BlockName= is Slurm's topology/block"},
           {"SwitchName=top\n", "topo.conf:1: switch top has neither Nodes= nor Switches="},
           {"SwitchName=a Nodes=\n", "topo.conf:1: Nodes= has no value"},
           {"SwitchName=a Nodes=n1 stray\n", "topo.conf:1: 'stray' is not KEY=VALUE"},
           {"# nothing\nSwitchName=s Switches=s\n", "topo.conf: no leaf switch"},
       }) {
    SCOPED_TRACE(c.text);
    EXPECT_NE(usage_error(c.text).find(c.needle), std::string::npos) << usage_error(c.text);
  }
}

TEST(TopologyConf, HostsNoLeafListsAreAUsageError) {
  std::string e = usage_error(kTwoLevel, {"n01", "n02", "gpu1", "gpu2", "n99"});
  EXPECT_NE(e.find("--topology topo.conf: 3 of 5 hosts are under no leaf switch (gpu1, gpu2, n99)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("or run without --topology"), std::string::npos) << e;
}

}  // namespace
}  // namespace fabkit::slurm
