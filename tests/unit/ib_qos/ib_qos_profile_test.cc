// emit-env/profile and validate on IB QoS: NCCL_IB_SL is derived from the subnet manager's
// PathRecord (the ib_qos section of the node reports), `validate` catches a node whose SM
// programming drifted since, and `fabcheck cluster` drift names a node that differs. The reports
// are the profile fixtures tests/fixtures/profile/node-gpu-ib-0{1,2}.json (active IB ports
// mlx5_0:1 and mlx5_1:1) with the ib_qos section of a fixture run placed on both ports.
#include <gtest/gtest.h>

#include <set>

#include "common/file_reader.h"
#include "common/json_read.h"
#include "common/report_json.h"
#include "profile/builder.h"
#include "profile/profile.h"
#include "slurm/drift_judge.h"
#include "tests/unit/ib_qos/fixture_run.h"

namespace fabkit::probes {
namespace {

using fabkit::testing::TempDir;

Json report_json(const std::string& node, const std::string& fixture) {
  auto path = fabkit::testing::project_fixtures() / "profile" / node;
  Json report = parse_json(value(read_text(path)), path.string());
  TempDir dir("ibqos-profile");
  Json qos = to_json(run_fixture(fixture, dir).facts);
  Json port = qos["ports"][0];
  qos["ports"] = Json::array();
  for (const char* dev : {"mlx5_0", "mlx5_1"}) {
    port["device"] = dev;
    qos["ports"].push_back(port);
  }
  report["ib_qos"] = qos;
  return report;
}

Report node_with_qos(const std::string& node, const std::string& fixture) {
  return report_from_json(report_json(node, fixture));
}

profile::Profile build(const std::string& fixture_a, const std::string& fixture_b) {
  profile::BuildOptions o;
  o.created_at = "2026-11-26T12:00:00Z";
  o.created_on = "login-01";
  return profile::build_profile(
      {{node_with_qos("node-gpu-ib-01.json", fixture_a), "a.json", false},
       {node_with_qos("node-gpu-ib-02.json", fixture_b), "b.json", false}},
      o);
}

std::set<std::string> codes(const std::vector<Finding>& fs) {
  std::set<std::string> out;
  for (const auto& f : fs) out.insert(f.code);
  return out;
}

TEST(IbQosProfile, NcclIbSlIsThePathRecordSl) {
  auto p = build("path_sl_differs", "path_sl_differs");
  ASSERT_EQ(p.settings.count("NCCL_IB_SL"), 1u);
  const auto& s = p.settings.at("NCCL_IB_SL");
  EXPECT_EQ(s.value, "2");
  ASSERT_FALSE(s.evidence.empty());
  EXPECT_NE(s.evidence[0].find("PathRecord SL 2 -> VL2 (OperationalVLs VL0-3)"), std::string::npos)
      << s.evidence[0];
}

TEST(IbQosProfile, SlZeroFromTheSmIsLeftToNcclsDefault) {
  auto p = build("healthy", "healthy");
  EXPECT_EQ(p.settings.count("NCCL_IB_SL"), 0u);
}

TEST(IbQosProfile, NoValueWhenThePathRecordSlIsDropped) {
  // sl_to_vl15: the SM's PathRecord says SL 3, and SL 3 maps to VL15 on the port.
  auto p = build("sl_to_vl15", "sl_to_vl15");
  EXPECT_EQ(p.settings.count("NCCL_IB_SL"), 0u);
}

TEST(IbQosProfile, ValidateCatchesANodeWhoseSmProgrammingDrifted) {
  auto p = build("path_sl_differs", "path_sl_differs");
  auto same = profile::validate_node(p, node_with_qos("node-gpu-ib-01.json", "path_sl_differs"),
                                     "gpu-ib-01");
  EXPECT_EQ(codes(same).count("profile.ib_qos_drifted"), 0u);
  auto drifted =
      profile::validate_node(p, node_with_qos("node-gpu-ib-01.json", "healthy"), "gpu-ib-01");
  ASSERT_EQ(codes(drifted).count("profile.ib_qos_drifted"), 1u)
      << "one finding per port? " << drifted.size();
}

TEST(IbQosProfile, ValidateCatchesAnSlNowMappedToVl15) {
  auto p = build("path_sl_differs", "path_sl_differs");  // NCCL_IB_SL=2
  Json r = report_json("node-gpu-ib-01.json", "path_sl_differs");
  for (auto& port : r["ib_qos"]["ports"]) port["sl2vl"][2] = 15;
  auto fs = profile::validate_node(p, report_from_json(r), "gpu-ib-01");
  int n = 0;
  for (const auto& f : fs)
    if (f.code == "profile.ib_qos_drifted") {
      ++n;
      EXPECT_NE(f.message.find("maps to VL15"), std::string::npos) << f.message;
    }
  EXPECT_EQ(n, 2);  // both ports
}

TEST(IbQosDrift, ClusterDriftNamesTheNodeThatDiffers) {
  std::vector<slurm::NodeDriftFacts> nodes = {
      {"gpu-ib-01",
       slurm::drift_facts_from_node_report(report_json("node-gpu-ib-01.json", "healthy"))},
      {"gpu-ib-02",
       slurm::drift_facts_from_node_report(report_json("node-gpu-ib-02.json", "healthy"))},
      {"gpu-ib-03",
       slurm::drift_facts_from_node_report(report_json("node-gpu-ib-02.json", "path_sl_differs"))}};
  EXPECT_EQ(nodes[0].values.at("ib_sl2vl:mlx5_0:1"), "0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3");
  EXPECT_EQ(nodes[0].values.at("ib_oper_vls:mlx5_0:1"), "VL0-3");
  int n = 0;
  for (const auto& f : slurm::judge_drift(nodes))
    if (f.code == "cluster.drift_ib_qos") {
      ++n;
      EXPECT_NE(f.message.find("gpu-ib-03"), std::string::npos) << f.message;
    }
  EXPECT_GE(n, 1);
  nodes.pop_back();
  for (const auto& f : slurm::judge_drift(nodes)) EXPECT_NE(f.code, "cluster.drift_ib_qos");
}

}  // namespace
}  // namespace fabkit::probes
