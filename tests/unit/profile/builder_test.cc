#include <gtest/gtest.h>

#include "common/errors.h"
#include "profile/builder.h"
#include "profile/profile_document.h"
#include "profile/profile_reader.h"
#include "test_util.h"

namespace fabkit::profile {
namespace {

using testing::build;
using testing::fixture_json;
using testing::input_json;

const Setting& cluster(const Profile& p, const std::string& var) {
  auto it = p.settings.find(var);
  if (it == p.settings.end()) throw std::runtime_error("no cluster setting " + var);
  return it->second;
}

TEST(ProfileBuilder, InfiniBandHostsFoldIntoClusterSettings) {
  Profile p = build({"node-gpu-ib-01.json", "node-gpu-ib-02.json"});
  EXPECT_TRUE(p.hosts.empty());
  EXPECT_EQ(cluster(p, "NCCL_IB_DISABLE").value, "0");
  // Only the ACTIVE ports, exact names: mlx5_2 is DOWN.
  EXPECT_EQ(cluster(p, "NCCL_IB_HCA").value, "=mlx5_0:1,mlx5_1:1");
  EXPECT_EQ(cluster(p, "NCCL_SOCKET_IFNAME").value, "=eno1");
  EXPECT_EQ(cluster(p, "GLOO_SOCKET_IFNAME").value, "eno1");
  EXPECT_EQ(cluster(p, "NCCL_NET_GDR_LEVEL").value, "PXB");  // worst GPU->NIC path is PXB
  EXPECT_EQ(cluster(p, "NCCL_IB_TIMEOUT").value, "22");
  EXPECT_EQ(cluster(p, "NCCL_IB_RETRY_CNT").value, "7");
  EXPECT_EQ(cluster(p, "MASTER_PORT").value, "29500");
  EXPECT_EQ(p.settings.count("NCCL_IB_GID_INDEX"), 0u);  // InfiniBand routes by LID
  EXPECT_EQ(p.settings.count("NCCL_TOPO_FILE"), 0u);
  // No pair report: nothing is measured.
  for (const auto& [var, s] : p.settings) EXPECT_EQ(s.basis, Basis::kInferred) << var;
  ASSERT_EQ(p.nodes.size(), 2u);
  ASSERT_EQ(p.nodes[0].hcas.size(), 2u);
  EXPECT_EQ(p.nodes[0].hcas[0].rate_gbps, 200.0);
  EXPECT_EQ(p.nodes[0].gpu_count, 2);
  EXPECT_TRUE(p.container.memlock_unlimited);
  EXPECT_EQ(p.container.binds, std::vector<std::string>{"/etc/nccl.conf"});
  EXPECT_EQ(p.container.devices, std::vector<std::string>{"/dev/infiniband"});
  // The evidence names the port states that led to the choice.
  const auto& ev = cluster(p, "NCCL_IB_HCA").evidence;
  EXPECT_NE(std::find(ev.begin(), ev.end(), "gpu-ib-01 rdma: mlx5_2:1 DOWN InfiniBand 10 Gb/s"), ev.end());
}

TEST(ProfileBuilder, RoceHostsKeepPerHostInterfaces) {
  Profile p = build({"node-roce-a.json", "node-roce-b.json"});
  ASSERT_EQ(p.hosts.count("roce-a"), 1u);
  EXPECT_EQ(p.hosts.at("roce-a").at("NCCL_SOCKET_IFNAME").value, "=enp37s0f1");
  EXPECT_EQ(p.hosts.at("roce-b").at("NCCL_SOCKET_IFNAME").value, "=eno1");
  EXPECT_EQ(p.hosts.at("roce-b").at("GLOO_SOCKET_IFNAME").value, "eno1");
  EXPECT_EQ(p.settings.count("NCCL_SOCKET_IFNAME"), 0u);
  EXPECT_EQ(cluster(p, "NCCL_IB_HCA").value, "=mlx5_0:1");
  // NCCL version unknown -> set the GID index, and say why.
  EXPECT_EQ(p.nccl.version, std::nullopt);
  EXPECT_EQ(cluster(p, "NCCL_IB_GID_INDEX").value, "3");
  EXPECT_NE(cluster(p, "NCCL_IB_GID_INDEX").reason.find("unknown"), std::string::npos);
  EXPECT_EQ(cluster(p, "NCCL_TOPO_FILE").value, "/opt/fabkit/topo.xml");
  // A GPU across the host bridge: allow GPUDirect only up to PXB.
  EXPECT_EQ(cluster(p, "NCCL_NET_GDR_LEVEL").value, "PXB");
  EXPECT_NE(cluster(p, "NCCL_NET_GDR_LEVEL").reason.find("PHB"), std::string::npos);
}

TEST(ProfileBuilder, GidIndexDependsOnNcclVersion) {
  BuildOptions o;
  o.nccl_version = "2.21.5";
  Profile p = build({"node-roce-a.json", "node-roce-b.json"}, o);
  EXPECT_EQ(cluster(p, "NCCL_IB_GID_INDEX").value, std::nullopt);
  EXPECT_NE(cluster(p, "NCCL_IB_GID_INDEX").reason.find("2.21.5"), std::string::npos);
  EXPECT_EQ(p.nccl.version_source, "--nccl-version");
  o.nccl_version = "2.18.3";
  p = build({"node-roce-a.json", "node-roce-b.json"}, o);
  EXPECT_EQ(cluster(p, "NCCL_IB_GID_INDEX").value, "3");
  o.nccl_version = "two";
  EXPECT_THROW(build({"node-roce-a.json"}, o), UsageError);
}

TEST(ProfileBuilder, VersionCompareIsNumeric) {
  EXPECT_EQ(version_less("2.9.1", "2.21"), true);
  EXPECT_EQ(version_less("2.21", "2.21"), false);
  EXPECT_EQ(version_less("2.28.3", "2.21"), false);
  EXPECT_EQ(version_less("x", "2.21"), std::nullopt);
}

TEST(ProfileBuilder, OneHostWithoutRdmaDisablesIbEverywhere) {
  Profile p = build({"node-gpu-ib-01.json", "node-cpu-01.json"});
  EXPECT_EQ(cluster(p, "NCCL_IB_DISABLE").value, "1");
  EXPECT_NE(cluster(p, "NCCL_IB_DISABLE").reason.find("cpu-01"), std::string::npos);
  EXPECT_EQ(p.settings.count("NCCL_IB_HCA") + p.hosts.at("gpu-ib-01").count("NCCL_IB_HCA"), 0u);
  EXPECT_EQ(p.hosts.at("cpu-01").at("NCCL_SOCKET_IFNAME").value, "=eth0");
  EXPECT_TRUE(p.nodes[0].hcas.empty());  // not used, so validate does not demand them
}

TEST(ProfileBuilder, PairVerdictMarksSettingsMeasured) {
  Profile p = build({"node-roce-a.json", "node-roce-b.json", "pair-roce-a-roce-b.json"});
  EXPECT_EQ(cluster(p, "NCCL_IB_DISABLE").basis, Basis::kMeasured);
  EXPECT_EQ(cluster(p, "NCCL_IB_HCA").basis, Basis::kMeasured);
  EXPECT_EQ(p.hosts.at("roce-a").at("NCCL_SOCKET_IFNAME").basis, Basis::kMeasured);
  EXPECT_EQ(cluster(p, "MASTER_PORT").value, "29511");
  EXPECT_EQ(cluster(p, "MASTER_PORT").basis, Basis::kMeasured);
  // The pair report's NCCL version (2.18.3 < 2.21) decides the GID index.
  EXPECT_EQ(p.nccl.version, "2.18.3");
  EXPECT_EQ(cluster(p, "NCCL_IB_GID_INDEX").value, "3");
  EXPECT_EQ(cluster(p, "NCCL_IB_TIMEOUT").basis, Basis::kInferred);
}

TEST(ProfileBuilder, PairVerdictOfSocketsDisablesIb) {
  Json pair = fixture_json("pair-roce-a-roce-b.json");
  pair["pair"]["recommended"]["transport"] = "fabkit-socket";
  std::vector<BuildInput> in = {testing::input("node-roce-a.json"),
                                testing::input("node-roce-b.json"), input_json(pair, "pair.json")};
  Profile p = build_profile(in, {});
  EXPECT_EQ(cluster(p, "NCCL_IB_DISABLE").value, "1");
  EXPECT_EQ(cluster(p, "NCCL_IB_DISABLE").basis, Basis::kMeasured);
}

TEST(ProfileBuilder, RefusesInputsWithoutNodesDuplicatesAndBadTypes) {
  EXPECT_THROW(build({"pair-roce-a-roce-b.json"}), UsageError);
  EXPECT_THROW(build({"node-roce-a.json", "node-roce-a.json"}), UsageError);
  Json bad = fixture_json("node-roce-a.json");
  bad["rdma"]["devices"][0]["ports"][0]["rate_gbps"] = "fast";
  try {
    build_profile({input_json(bad, "bad.json")}, {});
    FAIL() << "accepted a string rate";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("rdma.devices[0].ports[0].rate_gbps"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"fast\""), std::string::npos) << e.what();
  }
}

TEST(ProfileBuilder, HostileReportFieldsNeverReachTheProfile) {
  Json bad = fixture_json("node-roce-a.json");
  bad["net"]["recommended"]["name"] = "eth0;reboot";
  bad["net"]["nccl_pick"]["name"] = nullptr;
  bad["rdma"]["devices"][0]["name"] = "mlx5_0\nexport X=1";
  Profile p = build_profile({input_json(bad, "bad.json")}, {});
  EXPECT_EQ(p.settings.count("NCCL_SOCKET_IFNAME"), 0u);
  EXPECT_EQ(p.settings.count("NCCL_IB_HCA"), 0u);
  // And what is written reads back.
  EXPECT_NO_THROW(parse_profile(profile::serialize_profile(p), "generated"));
}

TEST(ProfileBuilder, SerializedProfileReadsBackIdentically) {
  Profile p = build({"node-roce-a.json", "node-roce-b.json", "pair-roce-a-roce-b.json"});
  std::string text = profile::serialize_profile(p);
  Profile back = parse_profile(text, "generated");
  EXPECT_EQ(profile::serialize_profile(back), text);
  EXPECT_EQ(back.computed_hash, back.provenance.content_hash);
  EXPECT_EQ(text.rfind("{\n  \"schema_version\": 1,", 0), 0u) << "schema_version must come first";
}

TEST(ProfileBuilder, UnmeasuredMarksEveryChoice) {
  BuildOptions o;
  o.unmeasured = true;
  Profile p = build({"node-gpu-ib-01.json"}, o);
  ASSERT_FALSE(p.settings.empty());
  for (const auto& [var, s] : p.settings) EXPECT_EQ(s.basis, Basis::kUnmeasured) << var;
}

}  // namespace
}  // namespace fabkit::profile
