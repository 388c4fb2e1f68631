#include "slurm/drift_judge.h"

#include <gtest/gtest.h>

namespace fabkit::slurm {
namespace {

// The fields of a `fabcheck node --json` report the drift judge reads (docs/json/*.md).
Json node_report(int mtu, const std::string& fw, Json memlock_soft, int gid_index) {
  return Json{
      {"kind", "node"},
      {"limits", {{"memlock_bytes", {{"soft", memlock_soft}, {"hard", "unlimited"}}}}},
      {"net",
       {{"interfaces",
         Json::array({{{"name", "lo"}, {"kind", "loopback"}, {"running", true}, {"mtu", 65536}},
                      {{"name", "ib0"}, {"kind", "ipoib"}, {"running", true}, {"mtu", mtu}},
                      {{"name", "eth9"}, {"kind", "physical"}, {"running", false}, {"mtu", 1}}})}}},
      {"rdma",
       {{"devices",
         Json::array(
             {{{"name", "mlx5_0"},
               {"fw_ver", fw},
               {"ports", Json::array({{{"port", 1},
                                       {"roce_v2_gid_index", gid_index},
                                       {"gids_known", true},
                                       {"gids", Json::array({{{"index", 0}, {"type", "RoCE v1"}},
                                                             {{"index", gid_index},
                                                              {"type", "RoCE v2"}}})}}})}}})}}}};
}

TEST(DriftJudge, ExtractsTheComparedFacts) {
  auto f = drift_facts_from_node_report(node_report(4092, "28.39.1002", "unlimited", 3));
  EXPECT_EQ(f["memlock_soft"], "unlimited");
  EXPECT_EQ(f["mtu:ib0"], "4092");
  EXPECT_EQ(f.count("mtu:lo"), 0u);    // loopback is no cluster link
  EXPECT_EQ(f.count("mtu:eth9"), 0u);  // not running
  EXPECT_EQ(f["fw_ver:mlx5_0"], "28.39.1002");
  EXPECT_EQ(f["gid_v2_index:mlx5_0:1"], "3");
  EXPECT_EQ(f["gid_types:mlx5_0:1"], "0=RoCE v1 3=RoCE v2");
  EXPECT_EQ(f["hcas"], "mlx5_0");
  EXPECT_TRUE(drift_facts_from_node_report(Json{{"kind", "node"}}).empty());
  EXPECT_EQ(drift_facts_from_node_report(
                Json{{"kind", "node"}, {"rdma", {{"devices", Json::array()}}}})["hcas"],
            "(none)");
  EXPECT_TRUE(drift_facts_from_node_report(Json("garbage")).empty());
}

TEST(DriftJudge, SameEverywhereIsClean) {
  std::vector<NodeDriftFacts> n;
  for (int i = 0; i < 4; ++i)
    n.push_back({"n" + std::to_string(i),
                 drift_facts_from_node_report(node_report(4092, "28.1", 65536, 3))});
  EXPECT_TRUE(judge_drift(n).empty());
}

TEST(DriftJudge, TheOddNodeOutIsNamedWithTheMajorityValue) {
  std::vector<NodeDriftFacts> n;
  for (int i = 0; i < 4; ++i)
    n.push_back({"n" + std::to_string(i),
                 drift_facts_from_node_report(node_report(4092, "28.1", "unlimited", 3))});
  n[2].values = drift_facts_from_node_report(node_report(2044, "22.9", 65536, 5));
  n[3].values["nccl_version"] = "2.21.5";
  n[0].values["nccl_version"] = "2.21.5";
  n[1].values["nccl_version"] = "2.21.5";
  n[2].values["nccl_version"] = "2.18.3";
  auto f = judge_drift(n);
  std::vector<std::string> got;
  for (const auto& x : f) got.push_back(x.code + " " + x.subject);
  EXPECT_EQ(
      got,
      (std::vector<std::string>{
          "cluster.drift_firmware n2:fw_ver:mlx5_0", "cluster.drift_gid n2:gid_types:mlx5_0:1",
          "cluster.drift_gid n2:gid_v2_index:mlx5_0:1", "cluster.drift_memlock n2:memlock_soft",
          "cluster.drift_mtu n2:mtu:ib0", "cluster.drift_nccl_version n2:nccl_version"}));
  for (const auto& x : f) {
    EXPECT_EQ(x.severity, Severity::kWarn);
    EXPECT_FALSE(x.fix.empty());
    EXPECT_NE(x.fix.find("(on n2)"), std::string::npos);
  }
  EXPECT_NE(f[4].message.find("MTU of ib0 is 2044 on n2; 3 of 4 nodes have 4092 (n0, n1, n3)"),
            std::string::npos)
      << f[4].message;
}

TEST(DriftJudge, ANodeThatLostAnHcaIsNamed) {
  auto with = [](std::vector<std::string> names) {
    Json devs = Json::array();
    for (const auto& n : names) devs.push_back({{"name", n}, {"ports", Json::array()}});
    return drift_facts_from_node_report(Json{{"kind", "node"}, {"rdma", {{"devices", devs}}}});
  };
  std::vector<NodeDriftFacts> n{{"a", with({"mlx5_0", "mlx5_1"})},
                                {"b", with({"mlx5_1", "mlx5_0"})},
                                {"c", with({"mlx5_0"})},
                                {"d", with({})}};
  auto f = judge_drift(n);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].code, "cluster.drift_hcas");
  EXPECT_EQ(f[0].subject, "d:hcas");  // "(none)" sorts before "mlx5_0"
  EXPECT_NE(f[0].message.find("RDMA device set is (none) on d; 2 of 4 nodes have mlx5_0,mlx5_1"),
            std::string::npos)
      << f[0].message;
  EXPECT_EQ(f[1].subject, "c:hcas");
}

TEST(DriftJudge, ANodeOnAnotherLibfabricOrWithoutTheNetPluginIsNamed) {
  auto node = [](Json libfabric_version, Json plugin) {
    return drift_facts_from_node_report(
        Json{{"kind", "node"},
             {"libfabric", {{"version", libfabric_version}}},
             {"nccl_net_plugin", {{"version", ""}, {"plugin", plugin}}}});
  };
  const Json ofi = {{"path", "/opt/amazon/ofi-nccl/lib/libnccl-net.so"},
                    {"kind", "aws-ofi-nccl"},
                    {"version", "1.14.2"}};
  auto f = node("1.22.0amzn1.0", ofi);
  EXPECT_EQ(f["libfabric_version"], "1.22.0amzn1.0");
  EXPECT_EQ(f["net_plugin"], "aws-ofi-nccl 1.14.2 (/opt/amazon/ofi-nccl/lib/libnccl-net.so)");
  EXPECT_EQ(node(nullptr, nullptr).count("libfabric_version"), 0u);  // not loadable: unknown
  EXPECT_EQ(node(nullptr, nullptr)["net_plugin"], "(none)");
  std::vector<NodeDriftFacts> n{{"p4d-1", node("1.22.0amzn1.0", ofi)},
                                {"p4d-2", node("1.22.0amzn1.0", ofi)},
                                {"p4d-3", node("1.17.0", nullptr)}};
  auto got = judge_drift(n);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].code, "cluster.drift_libfabric");
  EXPECT_EQ(got[0].subject, "p4d-3:libfabric_version");
  EXPECT_EQ(got[1].code, "cluster.drift_net_plugin");
  EXPECT_NE(got[1].message.find("NCCL net plugin is (none) on p4d-3; 2 of 3 nodes have "
                                "aws-ofi-nccl 1.14.2"),
            std::string::npos)
      << got[1].message;
}

TEST(DriftJudge, NoMajorityNamesEveryGroup) {
  std::vector<NodeDriftFacts> n{{"a", {{"mtu:eth0", "1500"}}}, {"b", {{"mtu:eth0", "9000"}}}};
  auto f = judge_drift(n);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].subject, "mtu:eth0");
  EXPECT_NE(f[0].message.find("1500 on a; 9000 on b"), std::string::npos);
  // A key one node lacks is unknown there, not a difference.
  std::vector<NodeDriftFacts> m{{"a", {{"fw_ver:mlx5_0", "1"}}}, {"b", {}}};
  EXPECT_TRUE(judge_drift(m).empty());
}

}  // namespace
}  // namespace fabkit::slurm
