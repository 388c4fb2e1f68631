// The NCCL runner's logic without a GPU: environment per configuration, the child protocol, the
// fallback judgement on real log formats, the child's no-GPU failure path, and the controller's
// clean "unavailable" between two ranks on loopback.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/errors.h"
#include "fabric/nccl_log/nccl_log.h"
#include "fabric/nccl_runner/child_process.h"
#include "fabric/nccl_runner/child_protocol.h"
#include "fabric/nccl_runner/nccl_env.h"
#include "fabric/nccl_runner/nccl_runner.h"
#include "loopback_harness.h"
#include "tests/support/ttar.h"

namespace fabkit::fabric {
namespace {

TEST(NcclEnv, SocketPinsNetAndExactInterface) {
  auto env = nccl_child_env({"Socket"}, "eth1");
  EXPECT_EQ(env.set.at("NCCL_NET"), "Socket");
  EXPECT_EQ(env.set.at("NCCL_IB_DISABLE"), "1");
  EXPECT_EQ(env.set.at("NCCL_SOCKET_IFNAME"), "=eth1");
  EXPECT_EQ(env.set.at("NCCL_DEBUG"), "INFO");
  EXPECT_EQ(env.set.at("NCCL_DEBUG_SUBSYS"), "INIT,NET");
  EXPECT_EQ(env.set.count("NCCL_IB_HCA"), 0u);
}

TEST(NcclEnv, IbSelectsExactlyOneHcaPort) {
  auto env = nccl_child_env({"IB", "mlx5_1", 1, -1}, "ib0");
  EXPECT_EQ(env.set.at("NCCL_NET"), "IB");
  EXPECT_EQ(env.set.at("NCCL_IB_HCA"), "=mlx5_1:1");
  EXPECT_EQ(env.set.at("NCCL_IB_DISABLE"), "0");
  EXPECT_EQ(env.set.count("NCCL_IB_GID_INDEX"), 0u);
}

TEST(NcclEnv, RoceCarriesGidIndexOrLeavesItToNccl) {
  auto env = nccl_child_env({"RoCE", "mlx5_0", 2, 3}, "ens1f0");
  EXPECT_EQ(env.set.at("NCCL_NET"), "IB");
  EXPECT_EQ(env.set.at("NCCL_IB_HCA"), "=mlx5_0:2");
  EXPECT_EQ(env.set.at("NCCL_IB_GID_INDEX"), "3");
  auto auto_gid = nccl_child_env({"RoCE", "mlx5_0", 1, -1}, "ens1f0");
  EXPECT_EQ(auto_gid.set.count("NCCL_IB_GID_INDEX"), 0u);
  EXPECT_NE(std::find(auto_gid.unset.begin(), auto_gid.unset.end(), "NCCL_IB_GID_INDEX"), auto_gid.unset.end());
}

TEST(NcclEnv, BadChoicesNameTheField) {
  EXPECT_THROW(nccl_child_env({"Infiniband"}, "x"), UsageError);
  EXPECT_THROW(nccl_child_env({"IB", ""}, "x"), UsageError);
  EXPECT_THROW(nccl_child_env({"IB", "mlx5_0", 0}, "x"), UsageError);
}

TEST(NcclEnv, MergeOverridesCallerAndDropsDivertingVariables) {
  std::map<std::string, std::string> base = {{"PATH", "/bin"}, {"NCCL_NET", "IB"}, {"NCCL_DEBUG_FILE", "/tmp/x"},
                                             {"NCCL_COMM_ID", "1.2.3.4:5"}};
  auto envp = merge_child_env(base, nccl_child_env({"Socket"}, ""));
  auto has = [&](const std::string& kv) { return std::find(envp.begin(), envp.end(), kv) != envp.end(); };
  EXPECT_TRUE(has("PATH=/bin"));
  EXPECT_TRUE(has("NCCL_NET=Socket"));
  for (const auto& e : envp) {
    EXPECT_NE(e.rfind("NCCL_DEBUG_FILE=", 0), 0u) << e;
    EXPECT_NE(e.rfind("NCCL_COMM_ID=", 0), 0u) << e;
  }
  EXPECT_EQ(nccl_transport_label({"RoCE"}), "nccl-roce");
}

TEST(ChildProtocol, ParsesEveryLineKindAndRejectsJunk) {
  std::string id = hex_encode(std::string(kUniqueIdBytes, '\x5a').data(), kUniqueIdBytes);
  EXPECT_EQ(parse_child_line("READY " + id).kind, ChildLineKind::kReady);
  EXPECT_EQ(parse_child_line("READY -").word, "-");
  EXPECT_EQ(parse_child_line("GO " + id + "\n").word, id);
  EXPECT_EQ(parse_child_line("GO -").kind, ChildLineKind::kInvalid);
  EXPECT_EQ(parse_child_line("READY abc").kind, ChildLineKind::kInvalid);
  auto f = parse_child_line("FAILED peer_timeout ncclAllReduce did not complete");
  EXPECT_EQ(f.kind, ChildLineKind::kFailed);
  EXPECT_EQ(f.word, "peer_timeout");
  EXPECT_EQ(f.text, "ncclAllReduce did not complete");
  EXPECT_EQ(parse_child_line("UNAVAILABLE no CUDA device/driver").text, "no CUDA device/driver");
  EXPECT_EQ(parse_child_line("PROGRESS 12x").kind, ChildLineKind::kInvalid);
  EXPECT_EQ(parse_child_line("RESULT {\"sizes\":[]}").kind, ChildLineKind::kResult);
  EXPECT_EQ(parse_child_line("RESULT nope").kind, ChildLineKind::kInvalid);
  EXPECT_EQ(parse_child_line("rm -rf /").kind, ChildLineKind::kInvalid);
  std::vector<uint8_t> back;
  ASSERT_TRUE(hex_decode(id, &back));
  EXPECT_EQ(back.size(), kUniqueIdBytes);
  EXPECT_EQ(back[7], 0x5a);
  EXPECT_FALSE(hex_decode("zz", &back));
}

Json parsed_fixture(const std::string& name) {
  std::ifstream f(::fabkit::testing::project_fixtures() / "nccl_log" / name);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << name;
  return nccl_log::to_json(nccl_log::parse_nccl_log(ss.str()));
}

TEST(NcclTransportJudge, AskedIbGotSocketIsAFallbackWithEvidence) {
  Json extra = Json::object();
  judge_transport_used("IB", parsed_fixture("nccl_2.21_socket_fallback.log"), &extra);
  EXPECT_EQ(extra["fell_back"], true);
  EXPECT_EQ(extra["nccl_network"], "Socket");
  ASSERT_FALSE(extra["fallback_evidence"].empty());
  EXPECT_NE(extra["fallback_evidence"].dump().find("Using network Socket"), std::string::npos) << extra.dump();
}

TEST(NcclTransportJudge, AskedIbGotIbIsNoFallback) {
  Json extra = Json::object();
  judge_transport_used("IB", parsed_fixture("nccl_2.18_ib_gdr.log"), &extra);
  EXPECT_EQ(extra["fell_back"], false);
  EXPECT_TRUE(extra["fallback_evidence"].empty());
}

TEST(NcclTransportJudge, LogWithoutNetworkIsUnknownNotPass) {
  Json extra = Json::object();
  judge_transport_used("IB", nccl_log::to_json(nccl_log::parse_nccl_log("NCCL version 2.21.5+cuda12.4\n")), &extra);
  EXPECT_TRUE(extra["fell_back"].is_null());
}

#ifdef FABKIT_TEST_NCCL_RUNNER
TEST(NcclChild, WithoutGpuSaysUnavailableOnFd3) {
  ChildProcess child(FABKIT_TEST_NCCL_RUNNER, {"--rank", "0", "--sizes", "64"}, {"PATH=/usr/bin:/bin"});
  bool eof = false;
  ChildLine line = parse_child_line(child.next_line(10000, &eof));
  if (line.kind == ChildLineKind::kReady) GTEST_SKIP() << "this machine has a CUDA device";
  ASSERT_FALSE(eof);
  EXPECT_EQ(line.kind, ChildLineKind::kUnavailable);
  EXPECT_NE(line.text.find("no CUDA device/driver"), std::string::npos) << line.text;
  EXPECT_EQ(child.wait_exit(5000), "exit 0");
}

TEST(NcclRunner, TwoRanksWithoutGpuAreUnavailableCleanly) {
  uint16_t port = testing::free_port();
  auto runs = testing::run_ranks({testing::loopback_spec(0, port, {64}), testing::loopback_spec(1, port, {64})},
                                 [](const AllreduceSpec& s) {
                                   NcclTransportChoice c{"Socket"};
                                   c.runner_path = FABKIT_TEST_NCCL_RUNNER;
                                   return run_nccl_allreduce(s, c);
                                 });
  for (const auto& r : runs) {
    if (r.status == "ok") GTEST_SKIP() << "this machine has CUDA devices";
    EXPECT_EQ(r.transport, "nccl-socket");
    EXPECT_EQ(r.status, "unavailable") << r.reason;
    EXPECT_NE(r.reason.find("no CUDA device/driver"), std::string::npos) << r.reason;
    EXPECT_EQ(r.extra["env"]["NCCL_NET"], "Socket");
  }
}
#endif

TEST(NcclRunner, MissingRunnerIsUnavailableNotAnError) {
  auto spec = testing::loopback_spec(0, testing::free_port(), {64});
  NcclTransportChoice c{"IB", "mlx5_0", 1, -1, "/nonexistent/fabcheck-nccl-runner"};
  auto run = run_nccl_allreduce(spec, c);
  EXPECT_EQ(run.status, "unavailable");
  EXPECT_EQ(run.extra["error"], "runner_not_built");
  EXPECT_EQ(run.transport, "nccl-ib");
}

TEST(NcclRunner, BadChoiceIsInvalidSpec) {
  auto run = run_nccl_allreduce(testing::loopback_spec(0, testing::free_port(), {64}), {"Ethernet"});
  EXPECT_EQ(run.status, "failed");
  EXPECT_EQ(run.extra["error"], "invalid_spec");
}

}  // namespace
}  // namespace fabkit::fabric
