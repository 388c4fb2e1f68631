#include <gtest/gtest.h>

#include <set>

#include "profile/profile.h"
#include "test_util.h"

namespace fabkit::profile {
namespace {

using testing::fixture_json;
using testing::report_from;

std::set<std::string> codes(const std::vector<Finding>& fs) {
  std::set<std::string> out;
  for (const auto& f : fs) out.insert(f.code);
  return out;
}

Json with_topo_check(Json node, bool present) {
  node["profile_files"] = {{"topo_file", {{"path", "/opt/fabkit/topo.xml"}, {"present", present}}}};
  return node;
}

class ValidateNode : public ::testing::Test {
 protected:
  Profile profile_ = testing::build({"node-roce-a.json", "node-roce-b.json"});
};

TEST_F(ValidateNode, MatchingNodeIsClean) {
  auto fs = validate_node(profile_, report_from(with_topo_check(fixture_json("node-roce-a.json"), true)), "roce-a");
  EXPECT_EQ(codes(fs), std::set<std::string>{"profile.ok"});
  EXPECT_EQ(exit_code_for(fs), kExitClean);
  // The other host matches with its own interface name.
  fs = validate_node(profile_, report_from(with_topo_check(fixture_json("node-roce-b.json"), true)), "roce-b");
  EXPECT_EQ(codes(fs), std::set<std::string>{"profile.ok"});
}

TEST_F(ValidateNode, InterfaceOfTheOtherHostIsMissingHere) {
  // roce-b's report checked as roce-a: enp37s0f1 does not exist there.
  auto fs = validate_node(profile_, report_from(with_topo_check(fixture_json("node-roce-b.json"), true)), "roce-a");
  EXPECT_TRUE(codes(fs).count("profile.interface_missing"));
  EXPECT_EQ(exit_code_for(fs), kExitFindings);
}

TEST_F(ValidateNode, DriftedNodeFailsEachCheck) {
  Json node = with_topo_check(fixture_json("node-roce-a.json"), false);
  node["net"]["interfaces"][1]["running"] = false;  // enp37s0f1 lost carrier
  node["net"]["interfaces"][1]["operstate"] = "down";
  auto& port = node["rdma"]["devices"][0]["ports"][0];
  port["state"] = "DOWN";
  port["rate_gbps"] = 50;
  port["link_layer"] = "InfiniBand";
  node["limits"]["memlock_bytes"]["soft"] = 8388608;
  node["nccl_env"]["variables"] = Json::array(
      {{{"name", "NCCL_IB_HCA"}, {"value", "mlx5"}, {"source", "/etc/nccl.conf"}}});
  auto fs = validate_node(profile_, report_from(node), "roce-a");
  std::set<std::string> want = {"profile.interface_down", "profile.hca_not_active",
                                "profile.hca_link_layer", "profile.hca_rate",
                                "profile.memlock_low",    "profile.topo_file_missing",
                                "profile.env_conflict"};
  EXPECT_EQ(codes(fs), want);
  for (const auto& f : fs) {
    EXPECT_FALSE(f.fix.empty()) << f.code;
    EXPECT_FALSE(f.subject.empty()) << f.code;
  }
  EXPECT_EQ(worst_severity(fs), Severity::kFail);
}

TEST_F(ValidateNode, MissingPortAndMissingSectionsAreReported) {
  Json node = with_topo_check(fixture_json("node-roce-a.json"), true);
  node["rdma"]["devices"][0]["name"] = "mlx5_9";
  auto fs = validate_node(profile_, report_from(node), "roce-a");
  EXPECT_TRUE(codes(fs).count("profile.hca_missing"));
  // A report without net/rdma sections: skipped checks are info, never a silent pass.
  Json bare = fixture_json("node-roce-a.json");
  bare.erase("net");
  bare.erase("rdma");
  bare.erase("topo_file");
  fs = validate_node(profile_, report_from(bare), "roce-a");
  int skipped = 0;
  for (const auto& f : fs) skipped += f.code == "profile.check_skipped";
  EXPECT_EQ(skipped, 3);  // interface, RDMA ports, topology file
  EXPECT_FALSE(codes(fs).count("profile.ok"));
}

TEST_F(ValidateNode, UnknownHostAndEditedProfileWarn) {
  auto fs = validate_node(profile_, report_from(fixture_json("node-cpu-01.json")), "cpu-01");
  EXPECT_TRUE(codes(fs).count("profile.host_unknown"));
  Profile edited = profile_;
  edited.computed_hash = "sha256:" + std::string(64, '0');
  fs = validate_node(edited, report_from(with_topo_check(fixture_json("node-roce-a.json"), true)), "roce-a");
  EXPECT_TRUE(codes(fs).count("profile.hash_mismatch"));
}

TEST(ValidateNodeRate, FasterLinkIsOnlyInfo) {
  Profile p = testing::build({"node-gpu-ib-01.json"});
  Json node = fixture_json("node-gpu-ib-01.json");
  node["rdma"]["devices"][0]["ports"][0]["rate_gbps"] = 400;
  auto fs = validate_node(p, report_from(node), "gpu-ib-01");
  EXPECT_TRUE(codes(fs).count("profile.hca_rate"));
  EXPECT_EQ(worst_severity(fs), Severity::kInfo);
}

}  // namespace
}  // namespace fabkit::profile
