// The GPU side of `fabcheck cluster`: drift of the NVIDIA driver, VBIOS and InfoROM (and NIC
// firmware) between node reports, and the per-node GPU health summary of its nodes table.
#include <gtest/gtest.h>

#include <sstream>

#include "reports/text/text_parts.h"
#include "slurm/cluster_document.h"
#include "slurm/cluster_judge.h"
#include "slurm/drift_judge.h"
#include "slurm/node_gpu_health.h"

namespace fabkit::slurm {
namespace {

// The fields of a node report's gpus section the cluster reads (docs/json/gpus.md).
Json gpu_node(const std::string& driver, const std::string& vbios, const std::string& inforom,
              const std::string& nic_fw) {
  Json devices = Json::array();
  for (int i = 0; i < 4; ++i)
    devices.push_back({{"index", i},
                       {"name", "NVIDIA H100 80GB HBM3"},
                       {"bus_id", "0000:1" + std::to_string(i) + ":00.0"},
                       {"health", {{"vbios_version", vbios}, {"inforom_image_version", inforom}}}});
  return {{"kind", "node"},
          {"gpus", {{"count", 4}, {"driver_version", driver}, {"devices", devices}}},
          {"rdma", {{"devices", Json::array({{{"name", "mlx5_0"}, {"fw_ver", nic_fw}}})}}}};
}

std::vector<std::string> codes(const std::vector<Finding>& fs) {
  std::vector<std::string> out;
  for (const auto& f : fs) out.push_back(f.code + " " + f.subject);
  return out;
}

TEST(GpuDrift, ExtractsDriverAndFirmwarePerModel) {
  Json n = gpu_node("570.133.20", "96.00.99.00.01", "G520.0200.00.05", "28.39.1002");
  n["gpus"]["devices"][3]["health"]["vbios_version"] = "96.00.74.00.0D";  // one GPU replaced
  n["gpus"]["devices"].push_back(
      {{"name", "NVIDIA L4"},
       {"health", {{"vbios_version", "95.04.29.00.06"}, {"inforom_image_version", nullptr}}}});
  auto f = drift_facts_from_node_report(n);
  EXPECT_EQ(f["gpu_driver"], "570.133.20");
  EXPECT_EQ(f["gpu_vbios:NVIDIA H100 80GB HBM3"], "96.00.74.00.0D, 96.00.99.00.01");
  EXPECT_EQ(f["gpu_vbios:NVIDIA L4"], "95.04.29.00.06");
  EXPECT_EQ(f["gpu_inforom:NVIDIA H100 80GB HBM3"], "G520.0200.00.05");
  EXPECT_EQ(f.count("gpu_inforom:NVIDIA L4"), 0u);  // unknown is not a difference
  EXPECT_EQ(f["fw_ver:mlx5_0"], "28.39.1002");
  // No gpus section, or one without GPUs: no GPU keys.
  EXPECT_EQ(drift_facts_from_node_report(Json{{"kind", "node"}}).count("gpu_driver"), 0u);
}

TEST(GpuDrift, TheOddNodeOutIsNamedForDriverVbiosInforomAndNicFirmware) {
  std::vector<NodeDriftFacts> nodes;
  for (const char* h : {"n1", "n2", "n3"})
    nodes.push_back({h, drift_facts_from_node_report(gpu_node("570.133.20", "96.00.99.00.01",
                                                              "G520.0200.00.05", "28.39.1002"))});
  nodes.push_back({"n4", drift_facts_from_node_report(gpu_node("570.86.15", "96.00.74.00.0D",
                                                               "G520.0200.00.03", "28.36.1010"))});
  auto fs = judge_drift(nodes);
  ASSERT_EQ(codes(fs),
            (std::vector<std::string>{
                "cluster.drift_firmware n4:fw_ver:mlx5_0", "cluster.drift_gpu_driver n4:gpu_driver",
                "cluster.drift_gpu_inforom n4:gpu_inforom:NVIDIA H100 80GB HBM3",
                "cluster.drift_gpu_vbios n4:gpu_vbios:NVIDIA H100 80GB HBM3"}));
  EXPECT_NE(fs[1].message.find("NVIDIA driver version is 570.86.15 on n4; 3 of 4 nodes have "
                               "570.133.20"),
            std::string::npos)
      << fs[1].message;
  EXPECT_NE(fs[3].message.find("GPU VBIOS of NVIDIA H100 80GB HBM3 is 96.00.74.00.0D"),
            std::string::npos)
      << fs[3].message;
  for (const auto& f : fs) EXPECT_EQ(f.severity, Severity::kWarn);
}

TEST(NodeGpuHealth, CountsFailingAndWarningGpusAndTheirCodes) {
  Json report = {{"gpus", {{"count", 8}, {"driver_version", "570.133.20"}}}};
  std::vector<Finding> fs = {
      info("gpu.found", "NVML", "8 GPUs"),
      fail("gpu.remap_pending", "0000:3a:00.0", "m", "f"),
      warn("gpu.busy", "0000:3a:00.0", "m", "f"),  // same GPU: counted once, as failing
      warn("gpu.clocks_hw_thermal", "0000:5d:00.0", "m", "f"),
      warn("gpu.query_failed", "NVML", "m", "f"),  // node-wide: a code, not a GPU
      fail("rdma.port_down", "mlx5_0:1", "m", "f"),
  };
  NodeGpuHealth h = node_gpu_health(report, fs);
  EXPECT_EQ(h.gpus, 8);
  EXPECT_EQ(h.driver_version, "570.133.20");
  EXPECT_EQ(h.gpus_failing, 1);
  EXPECT_EQ(h.gpus_warning, 1);
  EXPECT_EQ(h.codes, (std::vector<std::string>{"gpu.remap_pending", "gpu.busy",
                                               "gpu.clocks_hw_thermal", "gpu.query_failed"}));
  Json j = to_json(h);
  EXPECT_EQ(j["gpus_failing"], 1);
  EXPECT_EQ(to_json(node_gpu_health(Json{{"kind", "node"}}, {}))["gpus"], nullptr);
}

// Two nodes' reports in a cluster run: each node's GPU health in the nodes table, the GPU
// findings folded by code, and the driver drift.
TEST(NodeGpuHealth, ClusterReportCarriesEachNodesGpuHealth) {
  ClusterFacts f;
  f.hosts = {"g1", "g2", "g3"};
  f.launcher = "srun";
  f.max_parallel = 2;
  for (int i = 0; i < 3; ++i) {
    NodeRun n;
    n.host = f.hosts[i];
    n.ok = true;
    n.exit = i == 1 ? "exit status 1" : "exit status 0";
    n.report = gpu_node(i == 2 ? "570.86.15" : "570.133.20", "96.00.99.00.01", "G520.0200.00.05",
                        "28.39.1002");
    n.report["schema_version"] = 1;
    n.report["hostname"] = n.host;
    n.report["generated_at"] = "2026-11-26T00:00:00Z";
    n.report["findings"] = Json::array();
    if (i == 1)
      n.report["findings"] = Json::array({{{"severity", "fail"},
                                           {"code", "gpu.remap_pending"},
                                           {"subject", "0000:12:00.0"},
                                           {"message", "GPU 2: a row remapping is pending"},
                                           {"fix", "nvidia-smi -r -i 2"}}});
    f.nodes.push_back(n);
  }
  Report r = slurm::build_cluster_report(f, MatrixOptions{0.5});
  std::vector<std::string> got = codes(r.findings);
  EXPECT_EQ(got, (std::vector<std::string>{"gpu.remap_pending g2: 0000:12:00.0",
                                           "cluster.drift_gpu_driver g3:gpu_driver"}));
  const Json& nodes = r.sections.at(0).facts["nodes"];
  EXPECT_EQ(nodes[0]["gpu_health"]["gpus"], 4);
  EXPECT_EQ(nodes[0]["gpu_health"]["gpus_failing"], 0);
  EXPECT_EQ(nodes[1]["gpu_health"]["gpus_failing"], 1);
  EXPECT_EQ(nodes[1]["gpu_health"]["codes"], Json::array({"gpu.remap_pending"}));
  EXPECT_EQ(r.sections.at(0).facts["drift"]["g3"]["gpu_driver"], "570.86.15");
  std::ostringstream text;
  reports::text::render_cluster_section(r.sections.at(0).facts, text, {});
  EXPECT_NE(text.str().find("4: 1 FAIL (gpu.remap_pending)"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("4 ok"), std::string::npos) << text.str();
}

}  // namespace
}  // namespace fabkit::slurm
