// The EFA settings of a profile (profile/efa_settings.cc), their emit-env output, and validate's
// drift checks (profile/validate_fabric.cc) on node reports with an efa section (docs/efa.md).
#include <gtest/gtest.h>

#include <set>

#include "common/errors.h"
#include "profile/builder.h"
#include "profile/profile.h"
#include "profile/profile_document.h"
#include "profile/profile_reader.h"
#include "profile/resolver.h"
#include "profile/value_rules.h"
#include "reports/env/emitter.h"
#include "test_util.h"

namespace fabkit::profile {
namespace {

using testing::fixture_json;
using testing::input_json;
using testing::report_from;

// An IB fixture node turned into an EFA instance: its RDMA devices replaced by `devices` EFA
// devices (link layer "Unspecified", driver efa) and the efa section the node probe writes.
Json efa_node(const std::string& host, const std::string& type, int devices,
              std::optional<bool> device_rdma) {
  Json n = fixture_json("node-gpu-ib-01.json");
  n["hostname"] = host;
  Json devs = Json::array();
  for (int i = 0; i < devices; ++i)
    devs.push_back({{"name", "rdmap" + std::to_string(79 + i) + "s0"},
                    {"driver", "efa"},
                    {"ports",
                     {{{"port", 1},
                       {"state", "ACTIVE"},
                       {"link_layer", "Unspecified"},
                       {"rate_gbps", 100}}}}});
  n["rdma"]["devices"] = devs;
  Json inst = nullptr;
  if (device_rdma) inst = {{"name", type}, {"efa_devices", devices}, {"device_rdma", *device_rdma}};
  n["efa"] = {{"sys_vendor", "Amazon EC2"},
              {"product_name", type},
              {"instance", inst},
              {"device_count", devices},
              {"kernel_release", "6.14.0-1018-aws"}};
  return n;
}

Profile build_from(const std::vector<Json>& nodes) {
  std::vector<BuildInput> in;
  for (const auto& n : nodes)
    in.push_back(input_json(n, n["hostname"].get<std::string>() + ".json"));
  BuildOptions o;
  o.created_at = "2026-12-05T00:00:00Z";
  return build_profile(in, o);
}

std::set<std::string> codes(const std::vector<Finding>& fs) {
  std::set<std::string> out;
  for (const auto& f : fs) out.insert(f.code);
  return out;
}

const Finding* find(const std::vector<Finding>& fs, const std::string& code) {
  for (const auto& f : fs)
    if (f.code == code) return &f;
  return nullptr;
}

std::string emitted(const Profile& p, const std::string& host, reports::env::Format f) {
  reports::env::EmitInput in;
  in.host = host;
  in.source = "cluster.json (test)";
  in.settings = resolve_settings(p, host);
  in.container = p.container;
  in.profile_has_per_host = !p.hosts.empty();
  return reports::env::emit(f, in);
}

TEST(EfaProfile, DeviceRdmaInstancesGetTheGuideSettings) {
  Profile p = build_from(
      {efa_node("p4d-1", "p4d.24xlarge", 4, true), efa_node("p4d-2", "p4d.24xlarge", 4, true)});
  ASSERT_TRUE(p.settings.count("FI_PROVIDER"));
  EXPECT_EQ(p.settings.at("FI_PROVIDER").value, "efa");
  EXPECT_EQ(p.settings.at("FI_EFA_USE_DEVICE_RDMA").value, "1");
  ASSERT_TRUE(p.settings.count("FI_EFA_FORK_SAFE"));
  EXPECT_FALSE(p.settings.at("FI_EFA_FORK_SAFE").value);  // decided, and left unset
  EXPECT_EQ(p.settings.count("NCCL_IB_HCA"), 0u);         // EFA is not NCCL's IB transport
  EXPECT_NE(p.settings.at("NCCL_IB_DISABLE").reason.find("EFA only"), std::string::npos);
  EXPECT_TRUE(p.container.memlock_unlimited);
  ASSERT_EQ(p.nodes.size(), 2u);
  EXPECT_EQ(p.nodes[0].efa_devices, 4);
  EXPECT_EQ(p.nodes[0].instance_type, "p4d.24xlarge");
  const std::string ds = emitted(p, "p4d-1", reports::env::Format::kDeepspeed);
  EXPECT_NE(ds.find("FI_PROVIDER=efa\n"), std::string::npos) << ds;
  EXPECT_NE(ds.find("FI_EFA_USE_DEVICE_RDMA=1\n"), std::string::npos) << ds;
  EXPECT_EQ(ds.find("FI_EFA_FORK_SAFE"), std::string::npos) << ds;
  // The guide's two workarounds, on every EFA host.
  EXPECT_NE(ds.find("FI_EFA_USE_HUGE_PAGE=0\n"), std::string::npos) << ds;
  EXPECT_NE(ds.find("FI_EFA_SET_CUDA_SYNC_MEMOPS=0\n"), std::string::npos) << ds;
  // Every format carries them (reports/env renders whatever the profile resolves to).
  using reports::env::Format;
  for (Format f : {Format::kShell, Format::kDotenv, Format::kSlurm, Format::kApptainer,
                   Format::kDocker, Format::kJson}) {
    const std::string text = emitted(p, "p4d-2", f);
    EXPECT_NE(text.find("FI_PROVIDER"), std::string::npos) << reports::env::to_string(f) << text;
    EXPECT_NE(text.find("FI_EFA_USE_DEVICE_RDMA"), std::string::npos) << reports::env::to_string(f);
  }
}

TEST(EfaProfile, ForkSafeOnlyWhereTheKernelNeedsIt) {
  Json old_kernel = efa_node("p4d-old", "p4d.24xlarge", 4, true);
  old_kernel["efa"]["kernel_release"] = "5.10.228-219.884.amzn2.x86_64";
  Profile p = build_from({old_kernel, efa_node("p4d-new", "p4d.24xlarge", 4, true)});
  EXPECT_EQ(resolve_env(p, "p4d-old").at("FI_EFA_FORK_SAFE"), "1");
  EXPECT_EQ(resolve_env(p, "p4d-new").count("FI_EFA_FORK_SAFE"), 0u);
  EXPECT_EQ(resolve_env(p, "p4d-new").at("FI_PROVIDER"), "efa");
}

TEST(EfaProfile, InstancesWithoutDeviceRdmaGetNoDeviceRdma) {
  Profile p = build_from({efa_node("g5-1", "g5.48xlarge", 1, false)});
  EXPECT_EQ(p.settings.at("FI_PROVIDER").value, "efa");
  EXPECT_FALSE(p.settings.at("FI_EFA_USE_DEVICE_RDMA").value);
  EXPECT_NE(p.settings.at("FI_EFA_USE_DEVICE_RDMA").reason.find("aborts"), std::string::npos);
  const std::string ds = emitted(p, "g5-1", reports::env::Format::kDeepspeed);
  EXPECT_NE(ds.find("FI_PROVIDER=efa"), std::string::npos);
  EXPECT_EQ(ds.find("FI_EFA_USE_DEVICE_RDMA"), std::string::npos) << ds;
  EXPECT_NE(ds.find("FI_EFA_USE_HUGE_PAGE=0"), std::string::npos) << ds;
}

TEST(EfaProfile, HostsWithoutEfaGetNoFiVariables) {
  Profile p = testing::build({"node-gpu-ib-01.json", "node-gpu-ib-02.json"});
  for (const auto& [var, s] : p.settings) EXPECT_NE(var.rfind("FI_", 0), 0u) << var;
  EXPECT_FALSE(p.nodes[0].efa_devices);
  // A mixed cluster: only the EFA host carries them.
  Profile m =
      build_from({efa_node("p5-1", "p5.48xlarge", 32, true), fixture_json("node-gpu-ib-01.json")});
  EXPECT_EQ(resolve_env(m, "p5-1").count("FI_PROVIDER"), 1u);
  EXPECT_EQ(resolve_env(m, m.nodes[1].hostname).count("FI_PROVIDER"), 0u);
}

TEST(EfaProfile, NodeFabricFieldsSurviveTheRoundTrip) {
  Json a = efa_node("p5-1", "p5.48xlarge", 32, true);
  a["libfabric"] = {{"version", "1.22.0amzn4.0"}};
  a["nccl_net_plugin"] = {{"version", "1.13.2-aws"}};
  Profile p = build_from({a});
  Profile back = parse_profile(serialize_profile(p), "cluster.json");
  ASSERT_EQ(back.nodes.size(), 1u);
  EXPECT_EQ(back.nodes[0].efa_devices, 32);
  EXPECT_EQ(back.nodes[0].instance_type, "p5.48xlarge");
  EXPECT_EQ(back.nodes[0].libfabric_version, "1.22.0amzn4.0");
  EXPECT_EQ(back.nodes[0].net_plugin_version, "1.13.2-aws");
  Json doc = to_json(p);
  doc["nodes"][0]["libfabric_version"] = "1.22 $(reboot)";
  EXPECT_THROW(parse_profile(doc.dump(), "cluster.json"), UsageError);
}

TEST(EfaProfile, FiValuesFollowTheirGrammar) {
  EXPECT_FALSE(check_variable_value("FI_PROVIDER", "efa"));
  EXPECT_FALSE(check_variable_value("FI_PROVIDER", "^tcp,sockets"));
  EXPECT_TRUE(check_variable_value("FI_PROVIDER", "tcp;ofi_rxm"));  // ';' ends a shell command
  EXPECT_TRUE(check_variable_value("FI_PROVIDER", "EFA"));
  EXPECT_TRUE(check_variable_value("FI_PROVIDER", "efa,,shm"));
  EXPECT_FALSE(check_variable_value("FI_EFA_USE_DEVICE_RDMA", "1"));
  EXPECT_TRUE(check_variable_value("FI_EFA_USE_DEVICE_RDMA", "yes"));
  EXPECT_TRUE(check_variable_value("FI_EFA_FORK_SAFE", "2"));
  EXPECT_FALSE(check_variable_value("FI_EFA_USE_HUGE_PAGE", "0"));
  EXPECT_TRUE(check_variable_value("FI_EFA_SET_CUDA_SYNC_MEMOPS", "-1"));
}

class EfaValidate : public ::testing::Test {
 protected:
  Json node(const std::string& host, int devices, const std::string& libfabric) {
    Json n = efa_node(host, "p5.48xlarge", devices, true);
    n["libfabric"] = {{"version", libfabric}};
    n["nccl_net_plugin"] = {{"version", "1.13.2-aws"}};
    return n;
  }
  Profile profile_ =
      build_from({node("p5-1", 32, "1.22.0amzn4.0"), node("p5-2", 32, "1.22.0amzn4.0")});
};

TEST_F(EfaValidate, MatchingNodeIsClean) {
  auto fs = validate_node(profile_, report_from(node("p5-1", 32, "1.22.0amzn4.0")), "p5-1");
  EXPECT_FALSE(codes(fs).count("profile.efa_devices_drifted"));
  EXPECT_FALSE(codes(fs).count("profile.libfabric_version_drifted"));
  EXPECT_FALSE(codes(fs).count("profile.net_plugin_version_drifted"));
  EXPECT_FALSE(codes(fs).count("profile.instance_type_drifted"));
}

TEST_F(EfaValidate, OneDeviceLessFails) {
  auto fs = validate_node(profile_, report_from(node("p5-2", 31, "1.22.0amzn4.0")), "p5-2");
  const Finding* f = find(fs, "profile.efa_devices_drifted");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kFail);
  EXPECT_NE(f->message.find("31 EFA devices, 32"), std::string::npos) << f->message;
}

TEST_F(EfaValidate, OtherLibfabricAndPluginWarn) {
  Json n = node("p5-2", 32, "1.21.0amzn1.0");
  n["nccl_net_plugin"]["version"] = "1.11.0-aws";
  n["efa"]["product_name"] = "p5e.48xlarge";
  auto fs = validate_node(profile_, report_from(n), "p5-2");
  const Finding* lf = find(fs, "profile.libfabric_version_drifted");
  ASSERT_NE(lf, nullptr);
  EXPECT_EQ(lf->severity, Severity::kWarn);
  EXPECT_NE(lf->message.find("1.21.0amzn1.0"), std::string::npos);
  EXPECT_NE(lf->message.find("1.22.0amzn4.0"), std::string::npos);
  EXPECT_TRUE(codes(fs).count("profile.net_plugin_version_drifted"));
  EXPECT_TRUE(codes(fs).count("profile.instance_type_drifted"));
}

TEST_F(EfaValidate, UnknownHostIsComparedWithTheSharedValue) {
  auto fs = validate_node(profile_, report_from(node("p5-9", 30, "1.22.0amzn4.0")), "p5-9");
  EXPECT_TRUE(codes(fs).count("profile.host_unknown"));
  EXPECT_TRUE(codes(fs).count("profile.efa_devices_drifted"));
}

TEST_F(EfaValidate, MissingSectionsAreSkippedNotPassed) {
  Json n = node("p5-1", 32, "x");
  n.erase("libfabric");
  n.erase("efa");
  auto fs = validate_node(profile_, report_from(n), "p5-1");
  size_t skipped = 0;
  for (const auto& f : fs) skipped += f.code == "profile.check_skipped" ? 1 : 0;
  EXPECT_GE(skipped, 2u);
  EXPECT_FALSE(codes(fs).count("profile.ok"));
}

}  // namespace
}  // namespace fabkit::profile
