// GCP's GPUDirect plugins (TCPX on A3 High, TCPXO on A3 Mega, gIB on A3 Ultra/A4): identified,
// and the settings Google's own configurations give them checked (gcp_plugins.cc cites them).
#include <gtest/gtest.h>

#include "probes/nccl_net/nccl_net_facts.h"
#include "tests/support/ttar.h"
#include "tests/unit/nccl_net/plugin_builder.h"

namespace fabkit::probes {
namespace {

using fabkit::testing::build_fake_library;
using fabkit::testing::FakeLibrary;
using fabkit::testing::TempDir;
using fabkit::testing::write_file;

// google/nccl-plugin-gpudirecttcpx@4b8ea7f: ncclNetPlugin_v7 and its version text (the plugin
// logs it as "NET/GPUDirectTCPX ver. 3.1.8." in skypilot's TCPX example).
const FakeLibrary kTcpx{{7}, {}, {}, "NET/GPUDirectTCPX ver. 3.1.9."};

struct GcpNode {
  TempDir dir{"plugin-gcp"};
  std::map<std::string, std::string> env;
  std::filesystem::path at(const std::string& p) const { return dir.path() / p.substr(1); }
  NcclNetFacts gather() const {
    ProbeContext ctx;
    ctx.roots.root = dir.path();
    ctx.roots.etc = dir.path() / "etc";
    ctx.roots.sys = dir.path() / "sys";
    ctx.roots.live = true;
    ctx.env = Environment(env);
    NcclEnvFacts nccl_env;
    nccl_env.variables = resolve_nccl_variables(ctx.env, {});
    return gather_nccl_net(ctx, nccl_env);
  }
};

std::vector<std::string> codes(const std::vector<Finding>& fs, const std::string& code) {
  std::vector<std::string> subjects;
  for (const auto& f : fs)
    if (f.code == code) subjects.push_back(f.subject);
  return subjects;
}

TEST(PluginGcp, TcpxNeedsItsDataAndControlInterfaces) {
  GcpNode n;
  build_fake_library(kTcpx, n.at("/usr/local/nvidia/lib64/libnccl-net.so"));
  n.env["LD_LIBRARY_PATH"] = "/usr/local/nvidia/lib64";
  auto f = n.gather();
  ASSERT_TRUE(f.plugin);
  EXPECT_EQ(f.plugin->kind, "gpudirect-tcpx");
  EXPECT_EQ(f.plugin->version, "3.1.9");
  auto findings = judge_nccl_net(f, {});
  EXPECT_EQ(codes(findings, "nccl_net.gcp_setting_missing"),
            (std::vector<std::string>{"NCCL_GPUDIRECTTCPX_SOCKET_IFNAME",
                                      "NCCL_GPUDIRECTTCPX_CTRL_DEV"}));
  for (const auto& x : findings) {
    if (x.subject == "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME") {
      EXPECT_EQ(x.fix.rfind("export NCCL_GPUDIRECTTCPX_SOCKET_IFNAME=eth1,eth2,eth3,eth4", 0), 0u);
    }
  }
  n.env["NCCL_GPUDIRECTTCPX_SOCKET_IFNAME"] = "eth1,eth2,eth3,eth4";
  n.env["NCCL_GPUDIRECTTCPX_CTRL_DEV"] = "eth0";
  auto ok = judge_nccl_net(n.gather(), {});
  EXPECT_TRUE(codes(ok, "nccl_net.gcp_setting_missing").empty());
}

TEST(PluginGcp, TcpxClientPrefixDirectoryMustExist) {
  GcpNode n;
  build_fake_library(kTcpx, n.at("/usr/local/nvidia/lib64/libnccl-net.so"));
  n.env["LD_LIBRARY_PATH"] = "/usr/local/nvidia/lib64";
  n.env["NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX"] = "/run/tcpx";
  auto missing = judge_nccl_net(n.gather(), {});
  EXPECT_EQ(codes(missing, "nccl_net.tcpx_rxdm_dir_missing").size(), 1u);
  std::filesystem::create_directories(n.at("/run/tcpx"));
  auto present = judge_nccl_net(n.gather(), {});
  EXPECT_TRUE(codes(present, "nccl_net.tcpx_rxdm_dir_missing").empty());
}

TEST(PluginGcp, TcpxoIsKnownByItsDirectoryAndNeedsFastrakSettings) {
  GcpNode n;
  build_fake_library({{8}, {}, {}, ""}, n.at("/usr/local/tcpxo/lib64/libnccl-net.so"));
  n.env["LD_LIBRARY_PATH"] = "/usr/local/tcpxo/lib64";
  auto f = n.gather();
  ASSERT_TRUE(f.plugin);
  EXPECT_EQ(f.plugin->kind, "gpudirect-tcpxo");
  auto findings = judge_nccl_net(f, {});
  EXPECT_EQ(codes(findings, "nccl_net.gcp_setting_missing"),
            (std::vector<std::string>{"NCCL_FASTRAK_IFNAME", "NCCL_FASTRAK_CTRL_DEV"}));
}

TEST(PluginGcp, GibNetworkWithoutItsPluginFails) {
  // GCP's A3 Ultra/A4 images export NCCL_NET=gIB; without /usr/local/gib/lib64 on the library
  // path no plugin provides that network.
  GcpNode n;
  n.env["NCCL_NET"] = "gIB";
  auto none = judge_nccl_net(n.gather(), {});
  ASSERT_EQ(codes(none, "nccl_net.network_without_plugin").size(), 1u);
  for (const auto& x : none)
    if (x.code == "nccl_net.network_without_plugin") {
      EXPECT_EQ(x.severity, Severity::kFail);
      EXPECT_NE(x.fix.find("/usr/local/gib/lib64"), std::string::npos);
    }
  build_fake_library({{11}, {}, {}, ""}, n.at("/usr/local/gib/lib64/libnccl-net.so"));
  n.env["LD_LIBRARY_PATH"] = "/usr/local/gib/lib64";
  auto f = n.gather();
  ASSERT_TRUE(f.plugin);
  EXPECT_EQ(f.plugin->kind, "gib");
  EXPECT_TRUE(codes(judge_nccl_net(f, {}), "nccl_net.network_without_plugin").empty());
  // NCCL's own networks need no plugin.
  GcpNode m;
  m.env["NCCL_NET"] = "Socket";
  EXPECT_TRUE(codes(judge_nccl_net(m.gather(), {}), "nccl_net.network_without_plugin").empty());
}

TEST(PluginGcp, DmiSaysGoogleButNotTheMachineType) {
  GcpNode n;
  write_file(n.at("/sys/class/dmi/id/sys_vendor"), "Google\n");
  write_file(n.at("/sys/class/dmi/id/product_name"), "Google Compute Engine\n");
  auto f = n.gather();
  EXPECT_EQ(f.dmi_vendor, "Google");
  EXPECT_EQ(f.dmi_product, "Google Compute Engine");
  EXPECT_EQ(to_json(f)["dmi_vendor"], "Google");
}

TEST(PluginElfMachine, PluginForAnotherArchitectureFails) {
  TempDir dir("plugin-machine");
  auto so = dir.path() / "opt/x/libnccl-net.so";
  build_fake_library({{8}, {}, {}, ""}, so);
  std::string b = fabkit::testing::read_bytes(so);
  uint16_t other = host_elf_machine() == "aarch64" ? 62 : 183;
  b[18] = char(other & 0xff);
  b[19] = char(other >> 8);
  fabkit::testing::write_bytes(so, b);
  ProbeContext ctx;
  ctx.roots.root = dir.path();
  ctx.roots.etc = dir.path() / "etc";
  ctx.roots.sys = dir.path() / "sys";
  ctx.env = Environment(std::map<std::string, std::string>{{"LD_LIBRARY_PATH", "/opt/x"}});
  NcclEnvFacts nccl_env;
  auto f = gather_nccl_net(ctx, nccl_env);
  ASSERT_TRUE(f.plugin);
  EXPECT_NE(f.plugin->elf.machine, host_elf_machine());
  EXPECT_EQ(codes(judge_nccl_net(f, {}), "nccl_net.plugin_wrong_machine").size(), 1u);
}

}  // namespace
}  // namespace fabkit::probes
