// emit-env/profile and validate on RoCE QoS: NCCL_IB_TC is derived from what the fabric is set up
// for (the roce_qos section of the node reports), and `validate` catches a node whose QoS drifted
// since. The reports are the profile fixtures tests/fixtures/profile/node-roce-{a,b}.json (RoCE
// port mlx5_0:1) with the roce_qos section of a fixture run on the same port.
#include <gtest/gtest.h>

#include <set>

#include "common/file_reader.h"
#include "common/json_read.h"
#include "profile/builder.h"
#include "profile/profile.h"
#include "common/report_json.h"
#include "tests/unit/roce_qos/fixture_run.h"

namespace fabkit::probes {
namespace {

using fabkit::testing::TempDir;

// A profile fixture's node report with the roce_qos section of `fixture` moved onto its port.
Report node_with_qos(const std::string& node, const std::string& fixture) {
  auto path = fabkit::testing::project_fixtures() / "profile" / node;
  Json report = parse_json(value(read_text(path)), path.string());
  TempDir dir("roce-profile");
  Json qos = to_json(run_fixture(fixture, dir).facts);
  for (auto& p : qos["ports"]) p["device"] = "mlx5_0";
  report["roce_qos"] = qos;
  return report_from_json(report);
}

profile::Profile build(const std::string& fixture_a, const std::string& fixture_b) {
  profile::BuildOptions o;
  o.created_at = "2026-11-26T12:00:00Z";
  o.created_on = "login-01";
  return profile::build_profile({{node_with_qos("node-roce-a.json", fixture_a), "a.json", false},
                                 {node_with_qos("node-roce-b.json", fixture_b), "b.json", false}},
                                o);
}

std::set<std::string> codes(const std::vector<Finding>& fs) {
  std::set<std::string> out;
  for (const auto& f : fs) out.insert(f.code);
  return out;
}

TEST(RoceQosProfile, NcclIbTcIsTheLosslessClass) {
  auto p = build("healthy", "healthy");
  ASSERT_EQ(p.settings.count("NCCL_IB_TC"), 1u);
  const auto& s = p.settings.at("NCCL_IB_TC");
  EXPECT_EQ(s.value, "106");  // DSCP 26 -> priority 3, PFC on 3 (DOC-2792's -f row)
  ASSERT_FALSE(s.evidence.empty());
  EXPECT_NE(s.evidence[0].find("DSCP 26 -> priority 3"), std::string::npos) << s.evidence[0];
}

TEST(RoceQosProfile, NcclIbTcFollowsTheFabricNotAFixedValue) {
  // DOC-2792's first printout: PFC on 0,2,6,7, so DSCP 26 is lossy and the lossless class above
  // priority 0 with the lowest DSCP is priority 2, DSCP 16.
  auto p = build("pfc_off_nccl_priority", "pfc_off_nccl_priority");
  EXPECT_EQ(p.settings.at("NCCL_IB_TC").value, "66");
}

TEST(RoceQosProfile, NoValueUnderTrustPcp) {
  auto p = build("trust_pcp_pfc_off", "trust_pcp_pfc_off");
  ASSERT_EQ(p.settings.count("NCCL_IB_TC"), 1u);
  EXPECT_EQ(p.settings.at("NCCL_IB_TC").value, std::nullopt);
  EXPECT_NE(p.settings.at("NCCL_IB_TC").evidence[0].find("trust pcp"), std::string::npos);
}

TEST(RoceQosProfile, ValidateCatchesANodeWhoseQosDrifted) {
  auto p = build("healthy", "healthy");
  auto same = profile::validate_node(p, node_with_qos("node-roce-a.json", "healthy"), "roce-a");
  EXPECT_EQ(codes(same).count("profile.roce_qos_drifted"), 0u);
  auto drifted = profile::validate_node(
      p, node_with_qos("node-roce-a.json", "pfc_off_nccl_priority"), "roce-a");
  ASSERT_EQ(codes(drifted).count("profile.roce_qos_drifted"), 1u);
  for (const auto& f : drifted)
    if (f.code == "profile.roce_qos_drifted")
      EXPECT_NE(f.message.find("NCCL_IB_TC=106 (DSCP 26) lands on priority 3"), std::string::npos)
          << f.message;
}

}  // namespace
}  // namespace fabkit::probes
