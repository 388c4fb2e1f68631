#include <gtest/gtest.h>

#include "common/errors.h"
#include "common/hostlist.h"
#include "trainer/distributed/launch_env.h"
#include "trainer/optim/schedule.h"

namespace fabkit::trainer {
namespace {

using Hosts = std::vector<std::string>;

Environment E(std::map<std::string, std::string> vars) { return Environment(std::move(vars)); }

TEST(Hostlist, ExpandsRangesListsAndPadding) {
  EXPECT_EQ(expand_hostlist("node[01-04,07],gpu-a[1-2]"),
            (Hosts{"node01", "node02", "node03", "node04", "node07", "gpu-a1", "gpu-a2"}));
  EXPECT_EQ(expand_hostlist("n1"), (Hosts{"n1"}));
  EXPECT_EQ(expand_hostlist("a,b,c"), (Hosts{"a", "b", "c"}));
  EXPECT_EQ(expand_hostlist("n[08-10]"), (Hosts{"n08", "n09", "n10"}));
  EXPECT_EQ(expand_hostlist("r[1-2]-n[1-2]"), (Hosts{"r1-n1", "r1-n2", "r2-n1", "r2-n2"}));
  EXPECT_EQ(expand_hostlist("x[3]"), (Hosts{"x3"}));
}

TEST(Hostlist, BadFormsNameThePosition) {
  for (const char* bad : {"node[01-04", "node]1", "node[4-1]", "node[a-b]", "a,,b", "a,", "", "node[1-2,]"}) {
    try {
      expand_hostlist(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("position"), std::string::npos) << e.what();
    }
  }
}

TEST(LaunchEnv, SingleProcessWithoutLauncherVariables) {
  LaunchEnv le = detect_launch_env(E({{"HOME", "/root"}}), std::nullopt);
  EXPECT_EQ(le.launcher, "single");
  EXPECT_EQ(le.world_size, 1);
  EXPECT_EQ(le.master_port_source, "default");
}

TEST(LaunchEnv, TorchrunWithAgentStore) {
  LaunchEnv le = detect_launch_env(E({{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "4"},
                                                {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "10.0.0.1"},
                                                {"MASTER_PORT", "29400"}, {"TORCHELASTIC_RUN_ID", "x"},
                                                {"TORCHELASTIC_USE_AGENT_STORE", "True"}}),
                                   std::nullopt);
  EXPECT_EQ(le.launcher, "torchrun");
  EXPECT_EQ(le.rank, 3);
  EXPECT_EQ(le.local_rank, 1);
  EXPECT_EQ(le.world_size, 4);
  EXPECT_EQ(le.local_world_size, 2);
  EXPECT_EQ(le.master_addr, "10.0.0.1");
  EXPECT_EQ(le.master_port, 29400);
  EXPECT_TRUE(le.store_hosted_by_agent);
}

TEST(LaunchEnv, SrunWithCompressedNodelistResolvesTheMaster) {
  LaunchEnv le = detect_launch_env(
      E({{"SLURM_PROCID", "5"}, {"SLURM_LOCALID", "1"}, {"SLURM_NTASKS", "8"}, {"SLURM_NODEID", "2"},
                   {"SLURM_JOB_NODELIST", "gpu-a[07-08,10],gpu-b1"}, {"SLURM_TASKS_PER_NODE", "2(x3),2"}}),
      uint16_t{31000});
  EXPECT_EQ(le.launcher, "slurm");
  EXPECT_EQ(le.rank, 5);
  EXPECT_EQ(le.world_size, 8);
  EXPECT_EQ(le.local_world_size, 2);
  EXPECT_EQ(le.master_addr, "gpu-a07");
  EXPECT_EQ(le.master_port, 31000);
  EXPECT_EQ(le.master_port_source, "profile");
}

TEST(LaunchEnv, SrunStepValuesWinOverTheJobs) {
  LaunchEnv le = detect_launch_env(E({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "8"}, {"SLURM_STEP_NUM_TASKS", "2"},
                                                {"SLURM_JOB_NODELIST", "a[1-4]"}, {"SLURM_STEP_NODELIST", "a[3-4]"},
                                                {"MASTER_PORT", "1234"}}),
                                   std::nullopt);
  EXPECT_EQ(le.world_size, 2);
  EXPECT_EQ(le.master_addr, "a3");
  EXPECT_EQ(le.master_port, 1234);
}

TEST(LaunchEnv, MpirunNeedsMasterAddr) {
  Environment e = E({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  EXPECT_THROW(detect_launch_env(e, std::nullopt), UsageError);
  e.set("MASTER_ADDR", "h0");
  e.set("OMPI_COMM_WORLD_LOCAL_RANK", "0");
  e.set("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
  LaunchEnv le = detect_launch_env(e, std::nullopt);
  EXPECT_EQ(le.launcher, "mpirun");
  EXPECT_EQ(le.master_addr, "h0");
}

TEST(LaunchEnv, InconsistentValuesAreUsageErrorsNamingTheVariable) {
  try {
    detect_launch_env(E({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "x"}}), std::nullopt);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("RANK=2"), std::string::npos) << e.what();
  }
  try {
    detect_launch_env(E({{"RANK", "zero"}, {"WORLD_SIZE", "2"}}), std::nullopt);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("RANK='zero'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(detect_launch_env(E({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", "70000"}}), std::nullopt),
               UsageError);
}

TEST(LaunchEnv, TasksPerNode) {
  EXPECT_EQ(tasks_on_node("2(x3),1", 0), 2);
  EXPECT_EQ(tasks_on_node("2(x3),1", 2), 2);
  EXPECT_EQ(tasks_on_node("2(x3),1", 3), 1);
  EXPECT_THROW(tasks_on_node("2(x3),1", 4), UsageError);
  EXPECT_THROW(tasks_on_node("two", 0), UsageError);
}

TEST(Degrees, MessageCarriesTheNumbers) {
  EXPECT_NO_THROW(validate_degrees(4, 4, 1));
  try {
    validate_degrees(4, 3, 1);
    FAIL();
  } catch (const UsageError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("3 x pipeline degree 1 = 3"), std::string::npos) << m;
    EXPECT_NE(m.find("world size 4"), std::string::npos) << m;
  }
  EXPECT_NO_THROW(validate_degrees(4, 2, 2));
  EXPECT_NO_THROW(validate_degrees(4, 1, 4));
  try {
    validate_degrees(6, 2, 2);
    FAIL();
  } catch (const UsageError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("data-parallel degree 2 x pipeline degree 2 = 4 does not match the world size 6"),
              std::string::npos) << m;
    EXPECT_NE(m.find("set --dp 3"), std::string::npos) << m;
  }
}

TEST(Schedule, WarmupThenCosineToMinimum) {
  CosineSchedule s{1.0, 4, 14, 0.1};
  EXPECT_NEAR(s.lr_at(0), 0.2, 1e-12);
  EXPECT_NEAR(s.lr_at(3), 0.8, 1e-12);
  EXPECT_NEAR(s.lr_at(4), 1.0, 1e-12);
  EXPECT_NEAR(s.lr_at(9), 0.1 + 0.9 * 0.5, 1e-12);  // half-way: cos(pi/2) = 0
  EXPECT_NEAR(s.lr_at(14), 0.1, 1e-12);
  EXPECT_NEAR(s.lr_at(20), 0.1, 1e-12);
}

}  // namespace
}  // namespace fabkit::trainer
