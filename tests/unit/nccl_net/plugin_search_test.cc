// NCCL's search for its net plugin on a node laid out in a temp directory (the live-system code
// path, with / moved there), and the judge on what it finds.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "probes/nccl_net/nccl_net_facts.h"
#include "tests/support/ttar.h"
#include "tests/unit/nccl_net/plugin_builder.h"

namespace fabkit::probes {
namespace {

using fabkit::testing::build_fake_library;
using fabkit::testing::FakeLibrary;
using fabkit::testing::TempDir;
using fabkit::testing::write_file;

const char* kOfiLib = "/opt/amazon/ofi-nccl/lib";
// Real version texts (tests/fixtures/nccl_net/README.md).
const char* kOfi1142 = "NET/OFI Initializing aws-ofi-nccl 1.14.2";  // aws/aws-ofi-nccl#889
const char* kOfi150 = "Using aws-ofi-nccl 1.5.0aws";     // v1.5.0-aws: "Using " PACKAGE_STRING
const char* kNccl2289 = "NCCL version 2.28.9+cuda13.0";  // libnccl.so.2 of NCCL 2.28.9

class Node {
 public:
  Node() : dir_("plugin-search") {}
  std::filesystem::path at(const std::string& node_path) const {
    return dir_.path() / node_path.substr(1);
  }
  void library(const std::string& node_path, const FakeLibrary& lib) {
    build_fake_library(lib, at(node_path));
  }
  void env(const std::string& k, const std::string& v) { env_[k] = v; }
  NcclNetFacts gather() const {
    ProbeContext ctx;
    ctx.roots.root = dir_.path();
    ctx.roots.etc = dir_.path() / "etc";
    ctx.roots.sys = dir_.path() / "sys";
    ctx.roots.proc = dir_.path() / "proc";
    ctx.roots.live = true;
    ctx.env = Environment(env_);
    NcclEnvFacts nccl_env;
    nccl_env.variables = resolve_nccl_variables(ctx.env, {});
    return gather_nccl_net(ctx, nccl_env);
  }

 private:
  TempDir dir_;
  std::map<std::string, std::string> env_;
};

const Finding* find(const std::vector<Finding>& fs, const std::string& code) {
  for (const auto& f : fs)
    if (f.code == code) return &f;
  return nullptr;
}

TEST(PluginSearch, FindsOfiPluginThroughLdLibraryPath) {
  Node n;
  n.library(std::string(kOfiLib) + "/libnccl-net.so", {{6, 7, 8, 9, 10, 11}, {}, {}, kOfi1142});
  n.library("/usr/lib/libnccl.so.2", {{}, {}, {}, kNccl2289});
  n.env("LD_LIBRARY_PATH", kOfiLib);
  auto f = n.gather();
  ASSERT_TRUE(f.plugin);
  EXPECT_EQ(f.plugin->path, std::string(kOfiLib) + "/libnccl-net.so");
  EXPECT_EQ(f.plugin->kind, "aws-ofi-nccl");
  EXPECT_EQ(f.plugin->version, "1.14.2");
  ASSERT_TRUE(f.nccl);
  EXPECT_EQ(f.nccl->version, "2.28.9+cuda13.0");
  EXPECT_FALSE(f.plugin->distrust) << *f.plugin->distrust;
  auto findings = judge_nccl_net(f, {"rdmap16s27"});
  EXPECT_EQ(worst_severity(findings), Severity::kInfo);
  ASSERT_TRUE(find(findings, "nccl_net.plugin"));
  EXPECT_EQ(to_json(f)["version"], "1.14.2");
}

TEST(PluginSearch, FindsPluginThroughLdSoConfInclude) {
  Node n;
  n.library(std::string(kOfiLib) + "/libnccl-net.so", {{8}, {}, {}, kOfi1142});
  write_file(n.at("/etc/ld.so.conf"), "include /etc/ld.so.conf.d/*.conf\n");
  write_file(n.at("/etc/ld.so.conf.d/efa.conf"), std::string(kOfiLib) + "\n");
  auto f = n.gather();
  ASSERT_TRUE(f.plugin);
  bool from_conf = false;
  for (const auto& d : f.search_dirs) from_conf |= d.from == "/etc/ld.so.conf.d/efa.conf";
  EXPECT_TRUE(from_conf);
}

TEST(PluginSearch, EfaNodeWithoutPluginFailsWithTheInstallerPath) {
  Node n;
  auto findings = judge_nccl_net(n.gather(), {"rdmap16s27", "rdmap32s27"});
  const Finding* f = find(findings, "nccl_net.no_ofi_plugin");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kFail);
  EXPECT_NE(f->fix.find("LD_LIBRARY_PATH=/opt/amazon/ofi-nccl/lib"), std::string::npos);
  // The same node without EFA devices: no plugin is the normal case.
  EXPECT_TRUE(judge_nccl_net(n.gather(), {}).empty());
}

TEST(PluginSearch, NamedPluginNotFound) {
  Node n;
  n.library(std::string(kOfiLib) + "/libnccl-net.so", {{8}, {}, {}, kOfi1142});
  n.env("NCCL_NET_PLUGIN", "aws-ofi");
  n.env("LD_LIBRARY_PATH", kOfiLib);
  auto f = n.gather();
  EXPECT_FALSE(f.plugin);
  auto findings_x = judge_nccl_net(f, {});
  const Finding* x = find(findings_x, "nccl_net.plugin_not_found");
  ASSERT_TRUE(x);
  EXPECT_NE(x->message.find("libnccl-net-aws-ofi.so"), std::string::npos) << x->message;
  // Set to "ofi", NCCL finds libnccl-net-ofi.so, the name current aws-ofi-nccl installs.
  n.library(std::string(kOfiLib) + "/libnccl-net-ofi.so", {{8}, {}, {}, kOfi1142});
  n.env("NCCL_NET_PLUGIN", "ofi");
  ASSERT_TRUE(n.gather().plugin);
}

TEST(PluginSearch, DisabledPluginOnEfaFails) {
  Node n;
  n.library(std::string(kOfiLib) + "/libnccl-net.so", {{8}, {}, {}, kOfi1142});
  n.env("LD_LIBRARY_PATH", kOfiLib);
  n.env("NCCL_NET_PLUGIN", "none");
  auto f = n.gather();
  EXPECT_TRUE(f.disabled);
  EXPECT_FALSE(f.plugin);
  ASSERT_TRUE(find(judge_nccl_net(f, {"rdmap16s27"}), "nccl_net.plugin_disabled"));
}

TEST(PluginSearch, PluginBuiltForAnotherCollectiveLibraryFails) {
  Node n;
  // Offers only v4 (NCCL 2.8 to 2.18); NCCL 2.28 loads v11 down to v6.
  n.library(std::string(kOfiLib) + "/libnccl-net.so", {{4}, {4}, {}, kOfi150});
  n.library("/usr/lib/libnccl.so.2", {{}, {}, {}, kNccl2289});
  n.env("LD_LIBRARY_PATH", kOfiLib);
  auto findings = judge_nccl_net(n.gather(), {});
  const Finding* x = find(findings, "nccl_net.plugin_api_mismatch");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->severity, Severity::kFail);
  EXPECT_NE(x->message.find("v4 since NCCL 2.8"), std::string::npos) << x->message;
  EXPECT_NE(x->message.find("loads only v11"), std::string::npos) << x->message;
}

TEST(PluginSearch, OldOfiOnEfaNeedsProtoSimple) {
  Node n;
  n.library(std::string(kOfiLib) + "/libnccl-net.so", {{4}, {}, {}, kOfi150});
  n.env("LD_LIBRARY_PATH", kOfiLib);
  auto findings_x = judge_nccl_net(n.gather(), {"rdmap16s27"});
  const Finding* x = find(findings_x, "nccl_net.ofi_proto_simple");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->fix.rfind("export NCCL_PROTO=simple", 0), 0u);
  n.env("NCCL_PROTO", "Simple");
  EXPECT_FALSE(find(judge_nccl_net(n.gather(), {"rdmap16s27"}), "nccl_net.ofi_proto_simple"));
  // 1.14.2 needs nothing.
  Node m;
  m.library(std::string(kOfiLib) + "/libnccl-net.so", {{8}, {}, {}, kOfi1142});
  m.env("LD_LIBRARY_PATH", kOfiLib);
  EXPECT_FALSE(find(judge_nccl_net(m.gather(), {"rdmap16s27"}), "nccl_net.ofi_proto_simple"));
}

TEST(PluginSearch, WritableByOthersIsUntrusted) {
  Node n;
  std::string so = std::string(kOfiLib) + "/libnccl-net.so";
  n.library(so, {{8}, {}, {}, kOfi1142});
  n.env("LD_LIBRARY_PATH", kOfiLib);
  ASSERT_EQ(chmod(n.at(kOfiLib).c_str(), 0777), 0);
  auto f = n.gather();
  ASSERT_TRUE(f.trust_checked);
  ASSERT_TRUE(f.plugin && f.plugin->distrust);
  auto findings_x = judge_nccl_net(f, {});
  const Finding* x = find(findings_x, "nccl_net.plugin_untrusted");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->severity, Severity::kFail);
  EXPECT_NE(x->fix.find("chmod"), std::string::npos) << x->fix;
}

TEST(PluginSearch, TruncatedPluginIsANamedFinding) {
  Node n;
  std::string so = std::string(kOfiLib) + "/libnccl-net.so";
  n.library(so, {{8}, {}, {}, kOfi1142});
  std::filesystem::resize_file(n.at(so), 300);
  n.env("LD_LIBRARY_PATH", kOfiLib);
  auto findings_x = judge_nccl_net(n.gather(), {"rdmap16s27"});
  const Finding* x = find(findings_x, "nccl_net.plugin_unreadable");
  ASSERT_TRUE(x);
  EXPECT_NE(x->message.find("past the end of the file"), std::string::npos) << x->message;
}

TEST(PluginSearch, NotAPluginAtAll) {
  Node n;
  n.library(std::string(kOfiLib) + "/libnccl-net.so", {{}, {}, {}, ""});
  n.env("LD_LIBRARY_PATH", kOfiLib);
  ASSERT_TRUE(find(judge_nccl_net(n.gather(), {}), "nccl_net.plugin_no_api"));
}

TEST(PluginSearch, EmptyLdLibraryPathEntryMeansTheCurrentDirectory) {
  Node n;
  n.env("LD_LIBRARY_PATH", std::string(kOfiLib) + "::lib");
  auto f = n.gather();
  EXPECT_EQ(f.search_issues.size(), 2u);
  auto findings_x = judge_nccl_net(f, {});
  const Finding* x = find(findings_x, "nccl_net.search_path_relative");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->severity, Severity::kWarn);
}

}  // namespace
}  // namespace fabkit::probes
