// NCCL settings: sources and precedence as NCCL's setEnvFile/initEnv apply them, and the judge.
#include <gtest/gtest.h>

#include "probes/nccl_env/nccl_env_facts.h"
#include "tests/support/ttar.h"

namespace fabkit::probes {
namespace {

using fabkit::testing::write_file;

bool has_code(const std::vector<Finding>& fs, const std::string& code, Severity sev) {
  for (const auto& f : fs)
    if (f.code == code && f.severity == sev) return true;
  return false;
}

TEST(NcclConf, ParsesLikeSetEnvFile) {
  auto f = parse_nccl_conf("/etc/nccl.conf", "/etc/nccl.conf",
                           "# comment\nNCCL_DEBUG=WARN\nNCCL_SOCKET_IFNAME==ens1f0\n"
                           "no equals sign\n  # indented=comment\nNCCL_IB_HCA = mlx5_0\n"
                           "NCCL_IB_TIMEOUT=22\r\n");
  ASSERT_EQ(f.entries.size(), 5u);
  EXPECT_EQ(f.entries[0], (std::pair<std::string, std::string>{"NCCL_DEBUG", "WARN"}));
  // Everything after the first '=' is the value: "=ens1f0".
  EXPECT_EQ(f.entries[1].second, "=ens1f0");
  EXPECT_EQ(f.entries[2].first, "  # indented");
  EXPECT_EQ(f.entries[3].first, "NCCL_IB_HCA ");
  EXPECT_EQ(f.entries[4].second, "22\r");
  // no '='; indented '#' (its name has spaces too: 2); spaces around name and value (2); CR.
  EXPECT_EQ(f.issues.size(), 6u);
}

TEST(NcclConf, EnvironmentWinsThenFirstFile) {
  Environment env({{"NCCL_DEBUG", "INFO"}, {"PATH", "/bin"}, {"TORCH_NCCL_BLOCKING_WAIT", "1"}});
  auto user = parse_nccl_conf("/home/u/.nccl.conf", "~/.nccl.conf",
                              "NCCL_DEBUG=WARN\nNCCL_IB_HCA=mlx5_0\n");
  auto sys = parse_nccl_conf("/etc/nccl.conf", "/etc/nccl.conf",
                             "NCCL_IB_HCA=mlx5_1\nNCCL_SOCKET_IFNAME=eth0\n");
  auto vars = resolve_nccl_variables(env, {user, sys});
  std::map<std::string, NcclVariable> by;
  for (const auto& v : vars) by[v.name] = v;
  EXPECT_EQ(by.count("PATH"), 0u);
  EXPECT_EQ(by["NCCL_DEBUG"].value, "INFO");
  EXPECT_EQ(by["NCCL_DEBUG"].source, "environment");
  EXPECT_EQ(by["NCCL_DEBUG"].overridden, (std::vector<std::string>{"/home/u/.nccl.conf: WARN"}));
  EXPECT_EQ(by["NCCL_IB_HCA"].value, "mlx5_0");
  EXPECT_EQ(by["NCCL_IB_HCA"].source, "/home/u/.nccl.conf");
  EXPECT_EQ(by["NCCL_SOCKET_IFNAME"].source, "/etc/nccl.conf");
  EXPECT_EQ(by["TORCH_NCCL_BLOCKING_WAIT"].value, "1");
}

TEST(NcclConf, GatherReadsHomeThenEtcUnderSysroot) {
  fabkit::testing::TempDir dir("nccl-env");
  write_file(dir.path() / "root/.nccl.conf", "NCCL_IB_HCA=mlx5_0\n");
  write_file(dir.path() / "etc/nccl.conf", "NCCL_IB_HCA=mlx5_9\nNCCL_SOCKET_IFNAME=eth1\n");
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(dir.path());
  auto f = gather_nccl_env(ctx);
  ASSERT_EQ(f.files_read.size(), 2u);
  EXPECT_TRUE(f.files_read[0].present);
  EXPECT_EQ(f.files_read[0].role, "~/.nccl.conf");
  auto s = net_settings(f);
  EXPECT_EQ(s.socket_ifname.value_or(""), "eth1");
  EXPECT_EQ(s.socket_ifname_source, (dir.path() / "etc/nccl.conf").string());
  EXPECT_EQ(find_variable(f, "NCCL_IB_HCA")->value, "mlx5_0");
}

TEST(NcclConf, ConfFileReplacesHomeFile) {
  fabkit::testing::TempDir dir("nccl-env");
  write_file(dir.path() / "root/.nccl.conf", "NCCL_IB_HCA=mlx5_0\n");
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(dir.path());
  ctx.env.set("NCCL_CONF_FILE", (dir.path() / "missing.conf").string());
  auto f = gather_nccl_env(ctx);
  EXPECT_EQ(f.files_read[0].role, "NCCL_CONF_FILE");
  EXPECT_FALSE(f.files_read[0].present);
  EXPECT_EQ(find_variable(f, "NCCL_IB_HCA"), nullptr);  // ~/.nccl.conf is not read then
  EXPECT_TRUE(has_code(judge_nccl_env(f, std::nullopt), "nccl_env.conf_file_missing", Severity::kWarn));
}

NcclEnvFacts with_env(std::map<std::string, std::string> vars) {
  NcclEnvFacts f;
  f.variables = resolve_nccl_variables(Environment(std::move(vars)), {});
  return f;
}

const std::vector<RdmaPortBrief> kPorts = {{"mlx5_0", 1, "InfiniBand", true},
                                           {"mlx5_1", 1, "InfiniBand", true},
                                           {"mlx5_10", 1, "InfiniBand", true}};

TEST(JudgeNcclEnv, IbDisabledWithActivePortsFails) {
  auto f = with_env({{"NCCL_IB_DISABLE", "1"}});
  EXPECT_TRUE(has_code(judge_nccl_env(f, kPorts), "nccl_env.ib_disabled_with_active_ports",
                       Severity::kFail));
  EXPECT_FALSE(has_code(judge_nccl_env(f, std::vector<RdmaPortBrief>{}),
                        "nccl_env.ib_disabled_with_active_ports", Severity::kFail));
  EXPECT_FALSE(has_code(judge_nccl_env(with_env({{"NCCL_IB_DISABLE", "0"}}), kPorts),
                        "nccl_env.ib_disabled_with_active_ports", Severity::kFail));
}

TEST(JudgeNcclEnv, HcaPrefixAndAbsentDevice) {
  auto out = judge_nccl_env(with_env({{"NCCL_IB_HCA", "mlx5_1,mlx5_7"}}), kPorts);
  EXPECT_TRUE(has_code(out, "nccl_env.ib_hca_absent", Severity::kFail));
  bool fix_ok = false;
  for (const auto& x : out)
    if (x.code == "nccl_env.ib_hca_prefix") fix_ok = x.fix.find("NCCL_IB_HCA==mlx5_1:1") != std::string::npos;
  EXPECT_TRUE(fix_ok);
  EXPECT_TRUE(judge_nccl_env(with_env({{"NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1"}}), kPorts).empty());
}

TEST(JudgeNcclEnv, HcaExcludingEverythingFallsBackToSockets) {
  auto out = judge_nccl_env(with_env({{"NCCL_IB_HCA", "^mlx5"}}), kPorts);
  EXPECT_TRUE(has_code(out, "nccl_env.ib_hca_selects_nothing", Severity::kFail));
}

TEST(JudgeNcclEnv, UnknownNameWithSuggestion) {
  auto out = judge_nccl_env(with_env({{"NCCL_IB_HCAS", "mlx5_0"}, {"NCCL_FASTRAK_X", "1"}}), std::nullopt);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].code, "nccl_env.unknown_variable");
  EXPECT_NE(out[0].message.find("NCCL_IB_HCA?"), std::string::npos);
}

// NVIDIA's images set NCCL_VERSION (and build tools NCCL_HOME & co.): info, never a warning, so
// `fabcheck node` exits 0 in an NGC container. A name far from every known one is info too; a
// near miss is still the typo warning.
TEST(JudgeNcclEnv, ImageVariablesAndUnrecognisedNamesAreInfoTyposStillWarn) {
  auto out = judge_nccl_env(with_env({{"NCCL_VERSION", "2.28.9"}, {"NCCL_HOME", "/usr/local/nccl"},
                                      {"NCCL_ZZZ_FUTURE_KNOB", "1"}, {"NCCL_SOCKET_IFNAM", "eth0"}}),
                            std::nullopt);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_TRUE(has_code(out, "nccl_env.image_variable", Severity::kInfo));
  EXPECT_TRUE(has_code(out, "nccl_env.unrecognised_variable", Severity::kInfo));
  EXPECT_TRUE(has_code(out, "nccl_env.unknown_variable", Severity::kWarn));
  int warns = 0;
  for (const auto& x : out) {
    if (x.severity >= Severity::kWarn) {
      ++warns;
      EXPECT_EQ(x.subject, "NCCL_SOCKET_IFNAM");
      EXPECT_EQ(x.fix, "rename it to NCCL_SOCKET_IFNAME");
    }
  }
  EXPECT_EQ(warns, 1);
}

TEST(JudgeNcclEnv, WrongValueTypes) {
  EXPECT_TRUE(has_code(judge_nccl_env(with_env({{"NCCL_IB_GID_INDEX", "abc"}}), std::nullopt),
                       "nccl_env.bad_value", Severity::kWarn));
  EXPECT_TRUE(has_code(judge_nccl_env(with_env({{"NCCL_IB_TIMEOUT", "22s"}}), std::nullopt),
                       "nccl_env.bad_value", Severity::kWarn));
  EXPECT_TRUE(has_code(judge_nccl_env(with_env({{"NCCL_IB_GID_INDEX", "03"}}), std::nullopt),
                       "nccl_env.bad_value", Severity::kWarn));
  EXPECT_TRUE(has_code(judge_nccl_env(with_env({{"NCCL_DEBUG", "VERBOSE"}}), std::nullopt),
                       "nccl_env.bad_value", Severity::kWarn));
  EXPECT_TRUE(judge_nccl_env(with_env({{"NCCL_IB_GID_INDEX", "3"}, {"NCCL_DEBUG", "info"},
                                       {"NCCL_BUFFSIZE", "0x400000"}}),
                             std::nullopt)
                  .empty());
}

TEST(JudgeNcclEnv, TopoFileMissing) {
  NcclEnvFacts f = with_env({{"NCCL_TOPO_FILE", "/nonexistent/topo.xml"}});
  f.topo_file = "/nonexistent/topo.xml";
  f.topo_file_present = false;
  EXPECT_TRUE(has_code(judge_nccl_env(f, std::nullopt), "nccl_env.topo_file_missing", Severity::kFail));
}

}  // namespace
}  // namespace fabkit::probes
