#include <gtest/gtest.h>

#include "probes/locality/locality_facts.h"
#include "tests/support/ttar.h"
#include "topo/topology_file.h"

namespace fabkit::probes {
namespace {

int count(const std::vector<Finding>& fs, const std::string& code, Severity s) {
  int n = 0;
  for (const auto& f : fs) n += f.code == code && f.severity == s;
  return n;
}

TEST(LocalityProbe, SysrootWithoutHwlocXmlIsSkipped) {
  testing::TempDir root("locality-skip");
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(root.path());
  LocalityFacts f = gather_locality(ctx);
  EXPECT_TRUE(f.skipped);
  auto fs = judge_locality(f);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "locality.skipped");
  EXPECT_NE(fs[0].message.find("hwloc reads the live machine"), std::string::npos);
  EXPECT_EQ(to_json(f)["skipped"], true);
}

TEST(LocalityProbe, SysrootHwlocXmlWarnsForGpusOnlyReachingNicsOverSys) {
  testing::TempDir root("locality-xml");
  std::filesystem::copy_file(
      testing::project_fixtures() / "real/hwloc/hwloc_24em64t-2n6c2t-pci.xml",
      root.path() / "hwloc.xml");
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(root.path());
  LocalityFacts f = gather_locality(ctx);
  ASSERT_TRUE(f.topology) << f.error;
  auto fs = judge_locality(f);
  EXPECT_EQ(count(fs, "locality.gpu_far_from_nic", Severity::kWarn), 2);  // 14:00.0, 11:00.0
  EXPECT_EQ(count(fs, "locality.gpu_nic_phb", Severity::kInfo), 1);       // 06:00.0
  for (const auto& x : fs)
    if (x.code == "locality.gpu_far_from_nic") {
      EXPECT_NE(x.fix.find("NCCL_IB_HCA"), std::string::npos);
      EXPECT_NE(x.fix.find("CUDA_VISIBLE_DEVICES"), std::string::npos);
    }
  Json j = to_json(f);
  EXPECT_EQ(j["source"], "hwloc");
  ASSERT_EQ(j["gpus"].size(), 3u);
  EXPECT_EQ(j["gpus"][0]["bus_id"], "0000:06:00.0");
  EXPECT_EQ(j["gpus"][0]["nearest_nic"], "mlx4_0");
  EXPECT_EQ(j["gpus"][0]["path_level"], "PHB");
  EXPECT_EQ(j["gpus"][0]["numa_node"], 0);
}

TEST(LocalityProbe, PixGpuIsInfoOnly) {
  auto lt =
      topo::load_topology_file(testing::project_fixtures() / "real/nccl_topo/azure_ndv5-topo.xml");
  auto fs = judge_topology_locality(lt.topology, "ndv5");
  EXPECT_EQ(count(fs, "locality.gpu_nic", Severity::kInfo), 8);
  EXPECT_EQ(count(fs, "locality.gpu_far_from_nic", Severity::kWarn), 0);
  EXPECT_EQ(count(fs, "locality.nic", Severity::kInfo), 8);
  EXPECT_EQ(count(fs, "locality.summary", Severity::kInfo), 1);
  EXPECT_EQ(count(fs, "locality.numa", Severity::kInfo), 2);
}

TEST(LocalityProbe, NoGpusIsInfoNoNicsIsWarn) {
  topo::Topology empty;
  auto fs = judge_topology_locality(empty, "x");
  EXPECT_EQ(count(fs, "locality.no_gpus", Severity::kInfo), 1);
  EXPECT_EQ(worst_severity(fs), Severity::kInfo);
  topo::Topology gpus_only;
  gpus_only.pci.push_back({});
  topo::Gpu g;
  g.pci = 0;
  g.bus_id = "0000:01:00.0";
  gpus_only.gpus.push_back(g);
  EXPECT_EQ(count(judge_topology_locality(gpus_only, "x"), "locality.no_nics", Severity::kWarn), 1);
}

TEST(LocalityProbe, HwlocFailureIsAWarning) {
  LocalityFacts f;
  f.input = "live";
  f.error = "hwloc_topology_load(this machine) failed";
  auto fs = judge_locality(f);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "locality.hwloc_failed");
  EXPECT_EQ(fs[0].severity, Severity::kWarn);
}

TEST(LocalityProbe, LiveMachineWithoutGpusIsInfoOnly) {
  ProbeContext ctx;
  ctx.roots = SystemRoots::live_system("");
  LocalityFacts f = gather_locality(ctx);
  ASSERT_TRUE(f.topology) << f.error;
  if (!f.topology->gpus.empty()) GTEST_SKIP() << "this node has GPUs";
  auto fs = judge_locality(f);
  EXPECT_EQ(worst_severity(fs), Severity::kInfo);
  EXPECT_EQ(count(fs, "locality.no_gpus", Severity::kInfo), 1);
  EXPECT_LT(f.load_ms, 1000.0);
}

}  // namespace
}  // namespace fabkit::probes
