// Topology files sized to exhaust a node (issue #36): every GPU is paired with every NIC, so a
// file of 4000 GPUs and 4000 NICs took 25 s, 4.5 GB and printed 421 MB, and a 15 MB file of
// unknown elements took 5.9 GB. Over a cap the file is refused with a TopoParseError naming the
// file, the count and the cap; under them, the pairwise output is bounded and counts what it
// leaves out.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "tests/support/ttar.h"
#include "topo/nccl_topo_xml.h"
#include "topo/topology_file.h"
#include "topo/topology_json.h"

namespace fabkit::topo {
namespace {

std::string bus_id(size_t i) {
  char b[32];
  snprintf(b, sizeof b, "%04zx:%02zx:%02zx.%zu", i >> 16, (i >> 8) & 0xff, (i >> 3) & 0x1f, i & 7);
  return b;
}

const char* kCpu = "<cpu numaid=\"0\" affinity=\"ffffffff\">\n";

// gpus GPUs then nics InfiniBand NICs straight under one CPU, one element per line from line 3:
// every NIC is as near to every GPU (PHB, no hops).
std::string gpus_and_nics(size_t gpus, size_t nics) {
  std::string t = std::string("<system version=\"1\">\n") + kCpu;
  for (size_t i = 0; i < gpus; ++i)
    t += "<pci busid=\"" + bus_id(i) + "\" class=\"0x030200\" vendor=\"0x10de\"/>\n";
  for (size_t i = 0; i < nics; ++i)
    t += "<pci busid=\"" + bus_id(gpus + i) + "\" class=\"0x020700\" vendor=\"0x15b3\"/>\n";
  return t + "</cpu>\n</system>\n";
}

std::string with_unknown_elements(size_t n) {
  std::string t = gpus_and_nics(1, 1);
  std::string pad;
  for (size_t i = 0; i < n; ++i) pad += "<x/>\n";
  return t.insert(t.find("</cpu>"), pad);
}

TopoParseError expect_error(const std::string& text) {
  try {
    load_topology_text("big.xml", text);
  } catch (const TopoParseError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for a " << text.size() << "-byte document";
  return TopoParseError("", 0, "", "");
}

TEST(TopologyBounds, GpusOverTheCapAreRefusedAtTheFirstOneOver) {
  ASSERT_EQ(load_topology_text("max.xml", gpus_and_nics(kMaxTopoGpus, 1)).topology.gpus.size(),
            kMaxTopoGpus);
  TopoParseError e = expect_error(gpus_and_nics(kMaxTopoGpus + 1, 1));
  EXPECT_EQ(e.line(), static_cast<int>(kMaxTopoGpus) + 3);  // GPUs start on line 3
  EXPECT_EQ(e.element(), "pci");
  EXPECT_NE(e.detail().find("more than 1024 GPUs in one topology"), std::string::npos) << e.what();
}

TEST(TopologyBounds, NicsOverTheCapAreRefused) {
  TopoParseError e = expect_error(gpus_and_nics(1, kMaxTopoNics + 1));
  EXPECT_EQ(e.line(), static_cast<int>(kMaxTopoNics) + 4);
  EXPECT_NE(e.detail().find("more than 2048 NICs"), std::string::npos) << e.what();
}

TEST(TopologyBounds, PciNodesOverTheCapAreRefused) {
  // The <cpu> is one PCI node (a root complex), so kMaxTopoPciNodes devices are one too many.
  std::string t = std::string("<system version=\"1\">\n") + kCpu;
  for (size_t i = 0; i < kMaxTopoPciNodes; ++i)
    t += "<pci busid=\"" + bus_id(i) + "\" class=\"0x010802\"/>\n";
  t += "</cpu>\n</system>\n";
  TopoParseError e = expect_error(t);
  EXPECT_NE(e.detail().find("more than 65536 PCI nodes"), std::string::npos) << e.what();
}

TEST(TopologyBounds, XmlElementsOverTheCapAreRefusedBeforeTheTreeIsBuilt) {
  TopoParseError e = expect_error(with_unknown_elements(kMaxTopoXmlElements));
  // 4 elements before the padding (<system>, <cpu>, two <pci>) on lines 1..4: the element over
  // the cap is padding element kMaxTopoXmlElements - 3, on line 4 + that.
  EXPECT_EQ(e.line(), static_cast<int>(kMaxTopoXmlElements) + 1);
  EXPECT_EQ(e.element(), "x");
  EXPECT_NE(e.detail().find("more than 262144 XML elements"), std::string::npos) << e.what();
}

TEST(TopologyBounds, NotesPastTheListedBoundAreCountedNotKept) {
  LoadedTopology lt = load_topology_text("u.xml", with_unknown_elements(1000));
  EXPECT_EQ(lt.notes.size(), kMaxTopoNotesListed);
  EXPECT_EQ(lt.notes_left_out, 1000 - kMaxTopoNotesListed);
  EXPECT_NE(lt.notes[0].find("line 5: <x>: unknown element under <cpu> skipped"), std::string::npos)
      << lt.notes[0];
}

TEST(TopologyBounds, FileOverTheSizeCapNamesFileSizeAndCap) {
  testing::TempDir dir("topo-bounds");
  const auto path = dir.path() / "huge.xml";
  testing::write_file(path, std::string(kMaxTopoFileBytes + 1, ' '));
  try {
    load_topology_file(path);
    FAIL() << "no error";
  } catch (const TopoParseError& e) {
    EXPECT_EQ(e.file(), path.string());
    EXPECT_NE(e.detail().find("16777217 bytes, over the 16 MiB cap for a topology file"),
              std::string::npos)
        << e.what();
  }
  // Text handed over directly (tests, the fuzzer) has the same cap.
  EXPECT_NE(expect_error(std::string(kMaxTopoFileBytes + 1, ' ')).detail().find("16 MiB cap"),
            std::string::npos);
}

TEST(TopologyBounds, HwlocExportOverTheGpuCapIsRefused) {
  // hwloc builds its whole model at once; the caps are checked on it afterwards.
  const size_t n = kMaxTopoGpus + 1;
  std::string t =
      "<topology version=\"2.0\">\n<object type=\"Machine\" os_index=\"0\" cpuset=\"0x1\" "
      "complete_cpuset=\"0x1\" allowed_cpuset=\"0x1\" nodeset=\"0x1\" complete_nodeset=\"0x1\" "
      "allowed_nodeset=\"0x1\" gp_index=\"1\">\n<object type=\"NUMANode\" os_index=\"0\" "
      "cpuset=\"0x1\" complete_cpuset=\"0x1\" nodeset=\"0x1\" complete_nodeset=\"0x1\" "
      "gp_index=\"2\"/>\n<object type=\"PU\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\" "
      "nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"3\"/>\n";
  for (size_t i = 0; i < n; ++i)
    t += "<object type=\"PCIDev\" gp_index=\"" + std::to_string(10 + i) + "\" pci_busid=\"" +
         bus_id(0x100 + i) + "\" pci_type=\"0302 [10de:2330] [10de:16c1] a1 00\"/>\n";
  t += "</object>\n</topology>\n";
  TopoParseError e = expect_error(t);
  EXPECT_NE(e.detail().find("1025 GPUs, more than the 1024 fabcheck reads"), std::string::npos)
      << e.what();
  EXPECT_EQ(topology_over_caps(load_topology_text("ok.xml", gpus_and_nics(2, 2)).topology), "");
}

TEST(TopologyBounds, EquallyNearNicsAreListedUpToTheBoundAndTheRestCounted) {
  LoadedTopology lt = load_topology_text("tie.xml", gpus_and_nics(2, 100));
  Json g = gpu_to_json(lt.topology, lt.topology.gpus[1]);
  EXPECT_EQ(g["nearest_nic"], bus_id(2));  // the first in source order
  EXPECT_EQ(g["equally_near"].size(), kMaxEquallyNearListed);
  EXPECT_EQ(g["equally_near"][0], bus_id(3));
  EXPECT_EQ(g["equally_near_left_out"], 99 - kMaxEquallyNearListed);
  // Under the bound nothing is left out and the key is absent, as before.
  LoadedTopology small = load_topology_text("small.xml", gpus_and_nics(1, 3));
  Json s = gpu_to_json(small.topology, small.topology.gpus[0]);
  EXPECT_EQ(s["equally_near"].size(), 2u);
  EXPECT_FALSE(s.contains("equally_near_left_out"));
}

// The path computation nearest_nic uses (one chain per GPU, no allocation per pair) against the
// plain definition: both chains to the root, the first common node, the nodes strictly between.
struct Reference {
  const Topology& t;
  std::vector<int> chain(int n) const {
    std::vector<int> c;
    for (; n >= 0; n = t.pci[n].parent) c.push_back(n);
    return c;
  }
  std::pair<int, std::vector<int>> path(int a, int b) const {
    auto ca = chain(a), cb = chain(b);
    for (size_t i = 0; i < ca.size(); ++i)
      for (size_t j = 0; j < cb.size(); ++j)
        if (ca[i] == cb[j]) {
          std::vector<int> between(ca.begin() + std::min<size_t>(i, 1), ca.begin() + i);
          if (j > 1) between.insert(between.end(), cb.begin() + 1, cb.begin() + j);
          if (ca[i] != a && ca[i] != b) between.push_back(ca[i]);
          return {ca[i], between};
        }
    std::vector<int> between(ca.begin() + 1, ca.end());
    between.insert(between.end(), cb.begin() + 1, cb.end());
    return {-1, between};
  }
};

TEST(TopologyBounds, PathsAgreeWithThePlainDefinitionOnRandomTrees) {
  std::mt19937 rng(36);
  for (int round = 0; round < 20; ++round) {
    Topology t;
    const int roots = 1 + static_cast<int>(rng() % 3);
    for (int r = 0; r < roots; ++r) {
      PciNode root;
      root.kind = PciKind::kRoot;
      root.numa_node = static_cast<int>(rng() % 3) - 1;
      t.pci.push_back(root);
    }
    for (int i = 0; i < 120; ++i) {
      PciNode p;
      p.parent = static_cast<int>(rng() % t.pci.size());
      p.kind = rng() % 2 ? PciKind::kBridge : PciKind::kDevice;
      t.pci.push_back(p);
    }
    const int n = static_cast<int>(t.pci.size());
    Reference ref{t};
    for (int a = 0; a < n; a += 3)
      for (int b = 0; b < n; ++b) {
        const auto path = ref.path(a, b);
        const int lca = path.first;
        const std::vector<int>& between = path.second;
        ASSERT_EQ(pci_hops(t, a, b), static_cast<int>(between.size())) << a << " " << b;
        int bridges = 0;
        for (int k : between) bridges += t.pci[k].kind == PciKind::kBridge;
        ASSERT_EQ(bridges_between(t, a, b).size(), static_cast<size_t>(bridges));
        auto want = [&] {
          if (a == b) return PathLevel::kLoc;
          if (lca >= 0 && t.pci[lca].kind != PciKind::kRoot)
            return bridges <= 1 ? PathLevel::kPix : PathLevel::kPxb;
          if (lca >= 0) return PathLevel::kPhb;
          const int na = numa_of(t, a);
          return na >= 0 && na == numa_of(t, b) ? PathLevel::kPhb : PathLevel::kSys;
        };
        ASSERT_EQ(classify_pci_path(t, a, b), want()) << a << " " << b;
      }
  }
}

}  // namespace
}  // namespace fabkit::topo
