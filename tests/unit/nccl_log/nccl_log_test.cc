// The NCCL log parser on logs written in NCCL's exact line formats (tests/fixtures/nccl_log).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "fabric/nccl_log/nccl_log.h"
#include "tests/support/ttar.h"

namespace fabkit::nccl_log {
namespace {

NcclLogSummary parse_fixture(const std::string& name) {
  std::ifstream in(fabkit::testing::project_fixtures() / "nccl_log" / name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_nccl_log(ss.str());
}

bool has_code(const std::vector<Finding>& fs, const std::string& code) {
  for (const auto& f : fs)
    if (f.code == code) return true;
  return false;
}

TEST(NcclLog, Ib218WithGdr) {
  auto s = parse_fixture("nccl_2.18_ib_gdr.log");
  EXPECT_EQ(s.version.value_or(""), "2.18.5+cuda12.2");
  EXPECT_EQ(s.network.value_or(""), "IB");
  EXPECT_EQ(s.hcas, (std::vector<std::string>{"mlx5_0:1", "mlx5_1:1"}));
  EXPECT_EQ(s.bootstrap_interface.value_or(""), "eth0:10.0.0.11<0>");
  EXPECT_EQ(s.ib_oob_interface.value_or(""), "eth0:10.0.0.11<0>");
  EXPECT_EQ(s.gdr, std::optional<bool>(true));
  EXPECT_EQ(s.net_channel_lines, 4);
  EXPECT_TRUE(s.plugin_absent);
  EXPECT_TRUE(s.errors.empty());
  auto f = judge_nccl_log(s, std::string("IB"));
  EXPECT_EQ(worst_severity(f), Severity::kInfo);
}

TEST(NcclLog, RoceIsReportedAsRoce) {
  auto s = parse_fixture("nccl_2.21_roce.log");
  EXPECT_EQ(s.version.value_or(""), "2.21.5+cuda12.4");
  EXPECT_EQ(s.network.value_or(""), "RoCE");
  EXPECT_EQ(s.hca_link_layers, (std::vector<std::string>{"RoCE", "RoCE"}));
  EXPECT_TRUE(s.errors.empty());  // "Plugin load returned 2 ... No such file" is no error
  EXPECT_TRUE(judge_nccl_log(s, std::string("IB")).empty());  // IB verbs over RoCE: expected
  EXPECT_TRUE(has_code(judge_nccl_log(s, std::string("Socket")), "nccl_log.unexpected_network"));
}

TEST(NcclLog, SocketFallbackWhileHcasListed) {
  auto s = parse_fixture("nccl_2.21_socket_fallback.log");
  EXPECT_EQ(s.network.value_or(""), "Socket");
  EXPECT_EQ(s.hcas.size(), 2u);
  EXPECT_EQ(s.socket_interfaces, (std::vector<std::string>{"eth0:10.20.0.7<0>"}));
  auto f = judge_nccl_log(s, std::nullopt);
  EXPECT_TRUE(has_code(f, "nccl_log.socket_fallback"));
  EXPECT_EQ(worst_severity(f), Severity::kFail);
}

TEST(NcclLog, NoGdrOn212) {
  auto s = parse_fixture("nccl_2.12_ib_no_gdr.log");
  EXPECT_EQ(s.version.value_or(""), "2.12.12+cuda11.6");
  EXPECT_EQ(s.gdr, std::optional<bool>(false));
  EXPECT_TRUE(has_code(judge_nccl_log(s, std::nullopt), "nccl_log.no_gdr"));
}

TEST(NcclLog, OldChannelFormat27) {
  auto s = parse_fixture("nccl_2.7_ib.log");
  EXPECT_EQ(s.version.value_or(""), "2.7.8+cuda11.0");
  EXPECT_EQ(s.network.value_or(""), "IB");
  EXPECT_EQ(s.bootstrap_interface.value_or(""), "eno1:10.3.0.17<0>");  // "[0]" stripped
  EXPECT_EQ(s.gdr, std::optional<bool>(true));
  EXPECT_EQ(s.net_channel_lines, 4);
}

TEST(NcclLog, BootstrapSocketTrapOn23) {
  // 2.3 prints NET/Socket for bootstrap and has no "Using network" line: the Ring lines decide.
  auto s = parse_fixture("nccl_2.3_ib_bootstrap_socket.log");
  EXPECT_EQ(s.version.value_or(""), "2.3.7+cuda9.2");
  EXPECT_EQ(s.network.value_or(""), "IB");
  EXPECT_FALSE(s.socket_interfaces.empty());
  EXPECT_EQ(s.gdr, std::optional<bool>(true));
  auto f = judge_nccl_log(s, std::string("IB"));
  EXPECT_FALSE(has_code(f, "nccl_log.socket_fallback"));
  EXPECT_FALSE(has_code(f, "nccl_log.unexpected_network"));
  EXPECT_TRUE(has_code(f, "nccl_log.bootstrap_socket_lines"));
}

TEST(NcclLog, AwsOfiPlugin) {
  auto s = parse_fixture("nccl_2.21_aws_ofi.log");
  EXPECT_EQ(s.network.value_or(""), "AWS Libfabric");
  EXPECT_EQ(s.plugin.value_or(""), "aws-ofi-nccl");
  EXPECT_EQ(s.gdr, std::optional<bool>(true));
  EXPECT_EQ(s.intra_node_channel_lines, 1);
  EXPECT_TRUE(judge_nccl_log(s, std::string("AWS Libfabric")).empty());
}

TEST(NcclLog, ErrorsAreClassified) {
  auto s = parse_fixture("nccl_2.18_errors.log");
  ASSERT_EQ(s.errors.size(), 3u);
  EXPECT_EQ(s.errors[0].kind, "ibv_reg_mr_failed");
  EXPECT_NE(s.errors[0].cause.find("RLIMIT_MEMLOCK"), std::string::npos);
  EXPECT_EQ(s.errors[0].line, 6);
  EXPECT_EQ(s.errors[1].kind, "qp_transition_failed");
  EXPECT_NE(s.errors[1].fix.find("NCCL_IB_GID_INDEX"), std::string::npos);
  EXPECT_EQ(s.errors[2].kind, "transport_retry_exceeded");
  EXPECT_NE(s.errors[2].fix.find("NCCL_IB_TIMEOUT"), std::string::npos);
  EXPECT_EQ(s.network.value_or(""), "RoCE");
  auto f = judge_nccl_log(s, std::nullopt);
  EXPECT_TRUE(has_code(f, "nccl_log.transport_retry_exceeded"));
  EXPECT_EQ(worst_severity(f), Severity::kFail);
}

TEST(NcclLog, StatusEqualsFormAndOtherStatuses) {
  auto s = parse_nccl_log(
      "h:1:2 [0] transport/net_ib.cc:1 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<1> "
      "with status=12 opcode=0 len=0 vendor err 129 (Send)\n"
      "h:1:2 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> "
      "with error 5, opcode 0, len 0, vendor err 249\n");
  ASSERT_EQ(s.errors.size(), 2u);
  EXPECT_EQ(s.errors[0].kind, "transport_retry_exceeded");
  EXPECT_EQ(s.errors[1].kind, "work_request_flushed");
}

TEST(NcclLog, MissingLibibverbs) {
  auto s = parse_fixture("nccl_2.19_no_libibverbs.log");
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].kind, "libibverbs_missing");
  EXPECT_TRUE(s.ib_disabled);
  EXPECT_EQ(s.network.value_or(""), "Socket");
  EXPECT_TRUE(has_code(judge_nccl_log(s, std::nullopt), "nccl_log.socket_only"));
}

TEST(NcclLog, PluginInitFailureFallsBackToInternal) {
  auto s = parse_fixture("nccl_2.23_plugin_init_failed.log");
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].kind, "plugin_init_failed");
  EXPECT_EQ(s.network.value_or(""), "IB");
}

// NCCL 2.4-2.7 print no `Using network` line; with no channel lines either (init only, or a
// single node), the init lines decide: IB when NET/IB listed devices and no socket transport came
// up; Socket after `NET/IB : No device found.` or with IB disabled.
TEST(NcclLog, OldLogsWithoutUsingNetworkInferTheNetworkFromInitLines) {
  auto ib = parse_fixture("nccl_2.4_ib_init_only.log");
  EXPECT_EQ(ib.version.value_or(""), "2.4.8+cuda10.1");
  EXPECT_EQ(ib.network.value_or("none"), "IB");
  EXPECT_NE(ib.network_evidence.value_or("").find("NET/IB : Using (line 3)"), std::string::npos);
  EXPECT_FALSE(has_code(judge_nccl_log(ib, std::string("IB")), "nccl_log.network_unknown"));
  EXPECT_FALSE(has_code(judge_nccl_log(ib, std::string("IB")), "nccl_log.unexpected_network"));

  // 2.4's bootstrap prints a NET/Socket line before the IB one: still IB.
  auto boot = parse_fixture("nccl_2.4.7_ib_bootstrap_net_socket.log");
  EXPECT_EQ(boot.network.value_or("none"), "IB");
  EXPECT_FALSE(has_code(judge_nccl_log(boot, std::string("IB")), "nccl_log.unexpected_network"));

  auto nodev = parse_fixture("nccl_2.5_socket_no_ib_device.log");
  EXPECT_EQ(nodev.network.value_or("none"), "Socket");
  EXPECT_NE(nodev.network_evidence.value_or("").find("No device found (line 3)"), std::string::npos);
  EXPECT_TRUE(has_code(judge_nccl_log(nodev, std::string("IB")), "nccl_log.unexpected_network"));

  auto disabled = parse_fixture("nccl_2.6_socket_ib_disabled.log");
  EXPECT_EQ(disabled.network.value_or("none"), "Socket");
  EXPECT_EQ(disabled.socket_interfaces, (std::vector<std::string>{"ens3:172.31.4.7<0>", "ens4:172.31.20.7<0>"}));
}

// Verbs setup failures, from NCCL's own IB transport and through an external plugin, are named
// with their cause instead of a generic warning.
TEST(NcclLog, QpAndCqCreationFailuresAreClassified) {
  auto s = parse_nccl_log(
      "n1:1:1 [0] misc/ibvwrap.cc:284 NCCL WARN Call to ibv_create_cq failed with error Cannot allocate memory\n"
      "n1:1:1 [0] transport/net_ib.cc:512 NCCL WARN Call to ibv_create_qp failed with error Invalid argument\n"
      "n1:1:1 [0] ib_plugin.c:301 NCCL WARN NET/IBext : ibv_create_qp failed, error 12\n");
  ASSERT_EQ(s.errors.size(), 3u);
  EXPECT_EQ(s.errors[0].kind, "cq_create_failed");
  EXPECT_NE(s.errors[0].cause.find("RLIMIT_MEMLOCK"), std::string::npos);
  EXPECT_EQ(s.errors[1].kind, "qp_create_failed");
  EXPECT_NE(s.errors[1].cause.find("max_qp"), std::string::npos);
  EXPECT_NE(s.errors[1].fix.find("NCCL_IB_QPS_PER_CONNECTION"), std::string::npos);
  EXPECT_EQ(s.errors[2].kind, "qp_create_failed");
  auto f = judge_nccl_log(s, std::nullopt);
  EXPECT_TRUE(has_code(f, "nccl_log.cq_create_failed"));
  EXPECT_TRUE(has_code(f, "nccl_log.qp_create_failed"));
}

TEST(NcclLog, NotAnNcclLog) {
  auto s = parse_nccl_log("epoch 1 loss 2.3\nepoch 2 loss 2.1\n");
  EXPECT_EQ(s.lines, 2);
  auto f = judge_nccl_log(s, std::nullopt);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].code, "nccl_log.no_nccl_info");
}

TEST(NcclLog, OverlongLinesAreNotNcclLines) {
  std::string junk = "h:1:2 [0] NCCL INFO Channel 00/0 : " + std::string(200000, 'x') +
                     " via NET/IB/0/GDRDMA\nNCCL version 2.18.5+cuda12.2\n";
  auto s = parse_nccl_log(junk);
  EXPECT_EQ(s.net_channel_lines, 0);
  EXPECT_EQ(s.version.value_or(""), "2.18.5+cuda12.2");
  EXPECT_EQ(s.lines, 2);
}

TEST(NcclLog, InvalidUtf8StillSerialises) {
  // Found by fuzz_nccl_log: a stray Latin-1 byte made JSON rendering throw.
  auto s = parse_nccl_log("h:1:2 [0] misc/x.cc:1 NCCL WARN caf\xe9 \xff failed\n");
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_NO_THROW(to_json(s).dump());
}

TEST(NcclLog, JsonContract) {
  Json j = to_json(parse_fixture("nccl_2.18_ib_gdr.log"));
  for (const char* k : {"version", "network", "hcas", "bootstrap_interface", "gdr", "errors"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["hcas"][0], "mlx5_0:1");
}

}  // namespace
}  // namespace fabkit::nccl_log
