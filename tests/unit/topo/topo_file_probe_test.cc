#include <gtest/gtest.h>

#include "common/errors.h"
#include "probes/topo_file/topo_file_facts.h"
#include "tests/support/ttar.h"

namespace fabkit::probes {
namespace {

std::filesystem::path real(const std::string& name) {
  return testing::project_fixtures() / "real/nccl_topo" / name;
}

ProbeContext ctx_with(const std::filesystem::path& sysroot, const std::string& topo_file) {
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(sysroot);
  if (!topo_file.empty()) ctx.env.set("NCCL_TOPO_FILE", topo_file);
  return ctx;
}

bool has(const std::vector<Finding>& fs, const std::string& code, Severity s) {
  for (const auto& f : fs)
    if (f.code == code && f.severity == s) return true;
  return false;
}

TEST(TopoFileProbe, UnsetGivesNoFinding) {
  testing::TempDir root("topo-file-unset");
  TopoFileFacts f = gather_topo_file(ctx_with(root.path(), ""));
  EXPECT_FALSE(f.path);
  EXPECT_TRUE(judge_topo_file(f, std::vector<std::string>{}).empty());
  EXPECT_TRUE(to_json(f)["path"].is_null());
}

TEST(TopoFileProbe, SetButMissingFails) {
  testing::TempDir root("topo-file-missing");
  TopoFileFacts f = gather_topo_file(ctx_with(root.path(), "/nonexistent/topo.xml"));
  EXPECT_FALSE(f.present);
  EXPECT_TRUE(has(judge_topo_file(f, std::nullopt), "topo_file.missing", Severity::kFail));
}

TEST(TopoFileProbe, MissingTopoFlagIsAUsageError) {
  testing::TempDir root("topo-file-flag");
  ProbeContext ctx = ctx_with(root.path(), "");
  ctx.options.topo_file = root.path() / "nope.xml";
  EXPECT_THROW(gather_topo_file(ctx), UsageError);
}

TEST(TopoFileProbe, MalformedFailsWithTheParserMessage) {
  testing::TempDir root("topo-file-bad");
  testing::write_file(root.path() / "t.xml",
                      "<system version=\"1\">\n<cpu numaid=\"x\"/>\n</system>\n");
  TopoFileFacts f = gather_topo_file(ctx_with(root.path(), (root.path() / "t.xml").string()));
  auto fs = judge_topo_file(f, std::nullopt);
  ASSERT_TRUE(has(fs, "topo_file.malformed", Severity::kFail));
  EXPECT_NE(fs[0].message.find("t.xml:2: <cpu>: numaid=\"x\""), std::string::npos) << fs[0].message;
}

TEST(TopoFileProbe, GraphFileGivenAsTopologyFails) {
  testing::TempDir root("topo-file-graph");
  TopoFileFacts f = gather_topo_file(ctx_with(root.path(), real("azure_ncv4-graph.xml").string()));
  auto fs = judge_topo_file(f, std::nullopt);
  ASSERT_TRUE(has(fs, "topo_file.is_graph", Severity::kFail));
  EXPECT_NE(fs[0].fix.find("NCCL_GRAPH_FILE="), std::string::npos);
  EXPECT_EQ(to_json(f)["kind"], "nccl-graph");
}

TEST(TopoFileProbe, HwlocExportGivenAsTopologyFails) {
  testing::TempDir root("topo-file-hwloc");
  auto hw = testing::project_fixtures() / "real/hwloc/hwloc_24em64t-2n6c2t-pci.xml";
  auto fs = judge_topo_file(gather_topo_file(ctx_with(root.path(), hw.string())), std::nullopt);
  EXPECT_TRUE(has(fs, "topo_file.is_hwloc", Severity::kFail));
}

TEST(TopoFileProbe, NetsAbsentAmongRdmaDevicesWarn) {
  testing::TempDir root("topo-file-nets");
  TopoFileFacts f = gather_topo_file(ctx_with(root.path(), real("oci_BM.GPU.H100.8.xml").string()));
  ASSERT_TRUE(f.loaded);
  EXPECT_FALSE(f.pci_checked);  // no sys/bus/pci/devices in this root
  auto fs = judge_topo_file(f, std::vector<std::string>{"mlx5_0", "mlx5_1"});
  EXPECT_TRUE(has(fs, "topo_file.loaded", Severity::kInfo));
  ASSERT_TRUE(has(fs, "topo_file.net_absent", Severity::kWarn));
  // All 16 names present: no warning. Unknown RDMA devices: the check is skipped.
  std::vector<std::string> all;
  for (const auto& n : f.loaded->topology.nics)
    for (const auto& net : n.nets) all.push_back(net.name);
  EXPECT_FALSE(has(judge_topo_file(f, all), "topo_file.net_absent", Severity::kWarn));
  EXPECT_FALSE(has(judge_topo_file(f, std::nullopt), "topo_file.net_absent", Severity::kWarn));
}

TEST(TopoFileProbe, BusIdsAbsentFromSysfsWarnAfterNormalising) {
  testing::TempDir root("topo-file-pci");
  auto devices = root.path() / "sys/bus/pci/devices";
  // ndv5 names GPUs 0001..000c and NICs 0101..0108 (all 00:00.0); this node has all but 000c and
  // 0108, one written upper-case as a copied tree might.
  for (const char* id : {"0001", "0002", "0003", "0008", "0009", "000a", "000b", "0101", "0102",
                         "0103", "0104", "0105", "0106", "0107"})
    std::filesystem::create_directories(devices / (std::string(id) + ":00:00.0"));
  std::filesystem::remove(devices / "000b:00:00.0");
  std::filesystem::create_directories(devices / "000B:00:00.0");
  TopoFileFacts f = gather_topo_file(ctx_with(root.path(), real("azure_ndv5-topo.xml").string()));
  EXPECT_TRUE(f.pci_checked);
  auto fs = judge_topo_file(f, std::nullopt);
  ASSERT_TRUE(has(fs, "topo_file.bus_id_absent", Severity::kWarn));
  Json j = to_json(f);
  EXPECT_EQ(j["missing_bus_ids"], Json({"000c:00:00.0", "0108:00:00.0"}));
  // The virtual switches ffff:ff:0N.0 are not checked.
  for (const auto& f2 : fs) EXPECT_EQ(f2.message.find("ffff:ff"), std::string::npos);
}

TEST(TopoFileProbe, RcclFileIsNotedAsRcclFormat) {
  testing::TempDir root("topo-file-rccl");
  auto fs = judge_topo_file(
      gather_topo_file(ctx_with(root.path(), real("rccl_topo_8p_940_mi300x.xml").string())),
      std::nullopt);
  EXPECT_TRUE(has(fs, "topo_file.rccl_format", Severity::kInfo));
}

TEST(TopoFileProbe, UnknownElementIsInfo) {
  testing::TempDir root("topo-file-unknown");
  testing::write_file(root.path() / "t.xml",
                      "<system version=\"1\"><cpu numaid=\"0\"><gizmo/></cpu></system>");
  auto fs = judge_topo_file(
      gather_topo_file(ctx_with(root.path(), (root.path() / "t.xml").string())), std::nullopt);
  EXPECT_TRUE(has(fs, "topo_file.unknown_element", Severity::kInfo));
}

}  // namespace
}  // namespace fabkit::probes
