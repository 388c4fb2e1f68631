// fabtrain's NCCL transport check: the verdict on real NCCL logs (tests/fixtures/nccl_log) and
// the environment it prepares before the communicator exists.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/support/ttar.h"
#include "trainer/app/nccl_transport.h"

namespace fabkit::trainer {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(FABKIT_NCCL_LOG_FIXTURES) + "/" + name);
  EXPECT_TRUE(in) << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(NcclTransport, RequiredIbIsMetByAnIbLogAndRefusedOnASocketFallback) {
  std::string summary;
  EXPECT_EQ(transport_mismatch(fixture("nccl_2.18_ib_gdr.log"), std::string("IB"), &summary), "");
  EXPECT_NE(summary.find("network IB"), std::string::npos) << summary;
  const std::string why =
      transport_mismatch(fixture("nccl_2.21_socket_fallback.log"), std::string("IB"), &summary);
  EXPECT_NE(why.find("NCCL used Socket"), std::string::npos) << why;
  EXPECT_NE(summary.find("network Socket"), std::string::npos) << summary;
  // Nothing required: the summary only.
  EXPECT_EQ(transport_mismatch(fixture("nccl_2.21_socket_fallback.log"), std::nullopt, &summary),
            "");
  // Socket required and used.
  EXPECT_EQ(
      transport_mismatch(fixture("nccl_2.21_socket_fallback.log"), std::string("Socket"), nullptr),
      "");
}

// A collective failed: this rank's NCCL log is explained with the classifier of `fabcheck
// nccl-log` (a real log, tests/fixtures/nccl_log/real: local rank 3 ran out of GPU memory, rank 0
// saw its peer close).
TEST(NcclTransport, AFailedCollectiveIsExplainedFromTheLog) {
  const std::string why =
      explain_nccl_log(fixture("real/nccl_1235_closed_then_oom.log"), "rank-0.log");
  EXPECT_NE(why.find("rank-0.log"), std::string::npos) << why;
  EXPECT_NE(why.find("out_of_memory — GPU out of memory (the cause)"), std::string::npos) << why;
  EXPECT_NE(why.find("said first by: ng30903:3063028 [3] at line 14"), std::string::npos) << why;
  EXPECT_NE(why.find("likely causes, most likely first"), std::string::npos) << why;
  EXPECT_NE(why.find("consequences of out_of_memory"), std::string::npos) << why;
  EXPECT_NE(why.find("peer_closed"), std::string::npos) << why;
  EXPECT_EQ(explain_nccl_log(fixture("nccl_2.18_ib_gdr.log"), "rank-0.log"), "");  // no failure

  // From the file the plan names, as run_train does when a collective throws.
  const std::string dir = ::testing::TempDir();
  NcclLogPlan plan;
  plan.file = dir + "/nccl-explain-rank-0.log";
  {
    std::ofstream out(plan.file);
    out << fixture("real/nccl_1405_completion_12.log");
  }
  const std::string from_file = explain_nccl_failure(plan);
  EXPECT_NE(from_file.find("transport_retry_exceeded"), std::string::npos) << from_file;
  EXPECT_NE(from_file.find("peer 10.216.210.236<54862>"), std::string::npos) << from_file;
  std::remove(plan.file.c_str());
  EXPECT_EQ(explain_nccl_failure(plan), "");           // the log is gone: nothing to add
  EXPECT_EQ(explain_nccl_failure(NcclLogPlan{}), "");  // CPU/Gloo: no NCCL log
}

TEST(NcclTransport, ALogThatNamesNoNetworkCannotConfirmARequirement) {
  const std::string why = transport_mismatch("some unrelated output\n", std::string("IB"), nullptr);
  EXPECT_NE(why.find("does not say which network"), std::string::npos) << why;
}

// The variable's value, or "<unset>": an assertion on an unset variable fails instead of crashing.
std::string env_value(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "<unset>";
}

class NcclEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"}) {
      if (const char* x = std::getenv(v)) saved_.emplace_back(v, x);
      unsetenv(v);
    }
  }
  void TearDown() override {
    for (const char* v : {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"}) unsetenv(v);
    for (const auto& [k, v] : saved_) setenv(k.c_str(), v.c_str(), 1);
  }
  std::vector<std::pair<std::string, std::string>> saved_;
  fabkit::testing::TempDir dir_{"nccl-env"};
};

TEST_F(NcclEnv, UnsetDebugBecomesInfoIntoAFilePerRank) {
  const NcclLogPlan p = prepare_nccl_log(dir_.path().string(), 3, false);
  EXPECT_EQ(env_value("NCCL_DEBUG"), "INFO");
  EXPECT_EQ(env_value("NCCL_DEBUG_SUBSYS"), "INIT,NET");
  EXPECT_EQ(p.file, (dir_.path() / "nccl" / "rank-3.log").string());
  EXPECT_EQ(env_value("NCCL_DEBUG_FILE"), p.file);
}

TEST_F(NcclEnv, AQuieterDebugLevelIsKeptUnlessATransportIsRequired) {
  setenv("NCCL_DEBUG", "WARN", 1);
  NcclLogPlan p = prepare_nccl_log(dir_.path().string(), 0, false);
  EXPECT_EQ(env_value("NCCL_DEBUG"), "WARN");
  EXPECT_EQ(p.file, "");
  EXPECT_NE(p.adjustments.find("not verified"), std::string::npos) << p.adjustments;
  p = prepare_nccl_log(dir_.path().string(), 0, true);
  EXPECT_EQ(env_value("NCCL_DEBUG"), "INFO");
  EXPECT_NE(p.file, "");
}

TEST_F(NcclEnv, TheUsersDebugFileIsKeptWithNcclsSubstitutions) {
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_FILE", "/tmp/nccl.%h.%p.log", 1);
  const NcclLogPlan p = prepare_nccl_log(dir_.path().string(), 0, false);
  EXPECT_EQ(p.file.find('%'), std::string::npos) << p.file;
  EXPECT_NE(p.file.find("." + std::to_string(getpid()) + ".log"), std::string::npos) << p.file;
  EXPECT_EQ(env_value("NCCL_DEBUG_FILE"),
            "/tmp/nccl.%h.%p.log");  // NCCL expands it itself
}

}  // namespace
}  // namespace fabkit::trainer
