// One judge per PCIe link in the whole node probe: where sysfs shows a GPU's link, the pcie probe's
// finding stands and NVML's reading of the same link (gpu.pcie_*) is not repeated; where sysfs
// cannot show it, NVML's finding is the one reported.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "probes/node_probe.h"
#include "tests/support/ttar.h"

namespace fabkit {
namespace {

using testing::TempDir;

// NVML's answers for one H100 at `bus_id` trained Gen4 x8 of Gen5 x16, as --nvml-record writes
// them (the x8 fixture's GPU, moved onto the fixture tree's GPU).
std::string nvml_x8(const std::string& bus_id) {
  std::ifstream in(testing::project_fixtures() / "nvml/h100_pcie_x8.json");
  Json fixture = Json::parse(in);
  Json gpu = fixture["devices"][0];
  gpu["bus_id"] = bus_id;
  gpu["pcie"] = {
      {"current_generation", 4}, {"current_width", 8}, {"max_generation", 5}, {"max_width", 16}};
  fixture["devices"] = Json::array({gpu});
  return fixture.dump();
}

std::vector<std::string> codes_for(const Report& r, const std::string& subject) {
  std::vector<std::string> out;
  for (const auto& f : r.findings)
    if (f.subject == subject) out.push_back(f.code);
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& code) {
  return std::find(v.begin(), v.end(), code) != v.end();
}

TEST(NodeLinkJudge, SysfsJudgesTheGpuLinkAndNvmlDoesNotRepeatIt) {
  TempDir dir("node_link_judge");
  const auto fx = testing::project_fixtures() / "pcie";
  for (const char* t : {"sysfs_gpu_node.ttar", "pci_ids_excerpt.ttar", "overlay_gpu_gen4_x8.ttar"})
    testing::unpack_ttar(fx / t, dir.path(), "");
  testing::write_file(dir.path() / "nvml.json", nvml_x8("00000000:02:00.0"));
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(dir.path());
  ctx.options.nvml_replay = dir.path() / "nvml.json";
  Report r = run_node_probe(ctx);
  auto codes = codes_for(r, "0000:02:00.0");
  EXPECT_TRUE(has(codes, "pcie.link_width_degraded")) << ::testing::PrintToString(codes);
  EXPECT_FALSE(has(codes, "gpu.pcie_width_degraded")) << ::testing::PrintToString(codes);
  // NVML's view of the link stays a fact.
  bool gpus_section = false;
  for (const auto& s : r.sections)
    if (s.name == "gpus") {
      gpus_section = true;
      EXPECT_EQ(s.facts["devices"][0]["health"]["pcie"]["current_width"], 8) << s.facts.dump();
    }
  EXPECT_TRUE(gpus_section);
}

TEST(NodeLinkJudge, WithoutTheLinkInSysfsNvmlJudgesIt) {
  TempDir dir("node_link_judge");
  testing::write_file(dir.path() / "nvml.json", nvml_x8("00000000:02:00.0"));
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(dir.path());  // a tree without /sys/bus/pci (a container's)
  ctx.options.nvml_replay = dir.path() / "nvml.json";
  Report r = run_node_probe(ctx);
  auto codes = codes_for(r, "0000:02:00.0");
  EXPECT_TRUE(has(codes, "gpu.pcie_width_degraded")) << ::testing::PrintToString(codes);
  EXPECT_FALSE(has(codes, "pcie.link_width_degraded"));
}

}  // namespace
}  // namespace fabkit
