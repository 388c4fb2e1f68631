#include <gtest/gtest.h>

#include "common/errors.h"
#include "profile/profile.h"
#include "profile/resolver.h"
#include "test_util.h"

namespace fabkit::profile {
namespace {

TEST(ProfileResolver, EachHostGetsItsOwnInterface) {
  Profile p = testing::build({"node-roce-a.json", "node-roce-b.json"});
  auto a = resolve_env(p, "roce-a");
  auto b = resolve_env(p, "roce-b");
  EXPECT_EQ(a.at("NCCL_SOCKET_IFNAME"), "=enp37s0f1");
  EXPECT_EQ(b.at("NCCL_SOCKET_IFNAME"), "=eno1");
  EXPECT_EQ(a.at("GLOO_SOCKET_IFNAME"), "enp37s0f1");
  // Cluster-wide values reach both.
  EXPECT_EQ(a.at("NCCL_IB_HCA"), "=mlx5_0:1");
  EXPECT_EQ(b.at("NCCL_IB_HCA"), "=mlx5_0:1");
  EXPECT_EQ(a.at("MASTER_PORT"), "29500");
}

TEST(ProfileResolver, UnsetChoicesAreAbsentFromTheEnvironment) {
  BuildOptions o;
  o.nccl_version = "2.28.3";
  Profile p = testing::build({"node-roce-a.json", "node-roce-b.json"}, o);
  EXPECT_EQ(resolve_env(p, "roce-a").count("NCCL_IB_GID_INDEX"), 0u);
  auto all = resolve_settings(p, "roce-a");
  auto it = std::find_if(all.begin(), all.end(), [](const auto& r) { return r.name == "NCCL_IB_GID_INDEX"; });
  ASSERT_NE(it, all.end());
  EXPECT_FALSE(it->setting.value.has_value());
}

TEST(ProfileResolver, HostOverrideWinsOverClusterSetting) {
  Profile p = testing::build({"node-gpu-ib-01.json", "node-gpu-ib-02.json"});
  Setting port;
  port.value = "29600";
  port.reason = "test override";
  p.hosts["gpu-ib-02"]["MASTER_PORT"] = port;
  EXPECT_EQ(resolve_env(p, "gpu-ib-01").at("MASTER_PORT"), "29500");
  EXPECT_EQ(resolve_env(p, "gpu-ib-02").at("MASTER_PORT"), "29600");
  auto r = resolve_settings(p, "gpu-ib-02");
  auto it = std::find_if(r.begin(), r.end(), [](const auto& s) { return s.name == "MASTER_PORT"; });
  EXPECT_TRUE(it->per_host);
}

TEST(ProfileResolver, ShortAndLongHostNamesMatch) {
  Profile p = testing::build({"node-roce-a.json", "node-roce-b.json"});
  EXPECT_EQ(match_host(p, "roce-b.cluster.local"), "roce-b");
  EXPECT_EQ(resolve_env(p, "roce-b.cluster.local").at("NCCL_SOCKET_IFNAME"), "=eno1");
  EXPECT_EQ(match_host(p, "roce-c"), std::nullopt);
}

TEST(ProfileResolver, UnknownHostWithPerHostSettingsIsAnError) {
  Profile p = testing::build({"node-roce-a.json", "node-roce-b.json"});
  try {
    resolve_env(p, "roce-c");
    FAIL();
  } catch (const UsageError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("roce-c"), std::string::npos);
    EXPECT_NE(m.find("roce-a, roce-b"), std::string::npos) << m;
  }
  // A homogeneous profile applies to any host.
  Profile ib = testing::build({"node-gpu-ib-01.json", "node-gpu-ib-02.json"});
  EXPECT_EQ(resolve_env(ib, "gpu-ib-99").at("NCCL_IB_HCA"), "=mlx5_0:1,mlx5_1:1");
}

}  // namespace
}  // namespace fabkit::profile
