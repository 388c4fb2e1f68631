// The controller's parallel budget (slurm/controller_budget.h) and the RLIMIT_NOFILE raise it
// starts from (common/fd_limit.h).
#include "slurm/controller_budget.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>

#include "common/errors.h"
#include "common/fd_limit.h"

namespace fabkit::slurm {
namespace {

ControllerLimits roomy() {
  ControllerLimits l;
  l.fd_soft = l.fd_hard = 1u << 20;
  l.fds_open = 10;
  l.threads_max = 1u << 22;
  l.pid_max = 1u << 22;
  l.tasks_now = 500;
  return l;
}

TEST(ControllerBudget, DefaultRunsEveryPairOfTheWidestRoundWhenTheLimitsAllow) {
  auto c = choose_parallel(0, 2048, 4096, parallel_budget(roomy()));
  EXPECT_EQ(c.pair_runs, 2048);
  EXPECT_EQ(c.node_checks, 4096);
  EXPECT_FALSE(c.limited);
}

TEST(ControllerBudget, DescriptorLimitSetsTheDefaultAndTheChoiceSaysWhich) {
  ControllerLimits l = roomy();
  l.fd_soft = 1024;
  l.fd_hard = 4096;
  l.fds_open = 8;
  auto b = parallel_budget(l);
  EXPECT_EQ(b.pair_runs, static_cast<int>((1024 - 8 - kFdReserve) / kFdsPerPairRun));
  EXPECT_EQ(b.node_checks, static_cast<int>((1024 - 8 - kFdReserve) / kFdsPerNodeCheck));
  auto c = choose_parallel(0, 512, 1024, b);
  EXPECT_EQ(c.pair_runs, b.pair_runs);
  EXPECT_EQ(c.node_checks, b.node_checks);
  EXPECT_TRUE(c.limited);
  EXPECT_NE(c.why.find("RLIMIT_NOFILE 1024"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("ulimit -n 4096"), std::string::npos) << c.why;
}

TEST(ControllerBudget, RequestAboveTheBudgetIsAUsageErrorNamingTheLimitAndTheFix) {
  ControllerLimits l = roomy();
  l.fd_soft = l.fd_hard = 1024;
  auto b = parallel_budget(l);
  try {
    choose_parallel(b.pair_runs + 1, 2048, 4096, b);
    FAIL() << "no UsageError";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--max-parallel " + std::to_string(b.pair_runs + 1)), std::string::npos) << m;
    EXPECT_NE(m.find("RLIMIT_NOFILE 1024 (hard 1024"), std::string::npos) << m;
    EXPECT_NE(m.find("limits.conf"), std::string::npos) << m;
    EXPECT_NE(m.find("--max-parallel " + std::to_string(b.pair_runs) + " or less"), std::string::npos)
        << m;
  }
  EXPECT_EQ(choose_parallel(b.pair_runs, 2048, 4096, b).pair_runs, b.pair_runs);
}

TEST(ControllerBudget, RequestWithinTheBudgetIsKeptButNeverWiderThanTheRoundOrTheNodes) {
  auto b = parallel_budget(roomy());
  auto c = choose_parallel(32, 2048, 4096, b);
  EXPECT_EQ(c.pair_runs, 32);
  EXPECT_EQ(c.node_checks, 32);
  EXPECT_FALSE(c.limited);
  c = choose_parallel(32, 4, 9, b);
  EXPECT_EQ(c.pair_runs, 4);
  EXPECT_EQ(c.node_checks, 9);
}

TEST(ControllerBudget, ThreadLimitsBoundWhenTighterThanDescriptors) {
  ControllerLimits l = roomy();
  l.nproc_soft = 4096;
  l.tasks_now = 1000;
  auto b = parallel_budget(l);
  EXPECT_EQ(b.pair_runs, static_cast<int>((4096 - 1000 - kTaskReserve) / kTasksPerPairRun));
  EXPECT_NE(b.bound.find("RLIMIT_NPROC 4096"), std::string::npos) << b.bound;
  EXPECT_NE(b.fix.find("ulimit -u"), std::string::npos) << b.fix;
  l.nproc_soft.reset();
  l.threads_max = 3000;
  b = parallel_budget(l);
  EXPECT_EQ(b.pair_runs, static_cast<int>((3000 - 1000 - kTaskReserve) / kTasksPerPairRun));
  EXPECT_NE(b.bound.find("kernel.threads-max 3000"), std::string::npos) << b.bound;
}

TEST(ControllerBudget, UnknownKernelLimitsAreNoBoundAndAnExhaustedLimitStillRunsOnePair) {
  ControllerLimits l = roomy();
  l.fd_soft = l.fd_hard = UINT64_MAX;  // RLIM_INFINITY
  l.threads_max = 0;
  l.pid_max = 0;
  EXPECT_EQ(parallel_budget(l).pair_runs, 1 << 20);
  l.fd_soft = l.fd_hard = 32;  // below the reserve
  auto b = parallel_budget(l);
  EXPECT_EQ(b.pair_runs, 1);
  EXPECT_EQ(b.node_checks, 1);
}

TEST(FdLimit, SoftLimitIsRaisedToTheHardOne) {
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  if (before.rlim_max < 64 || before.rlim_max == RLIM_INFINITY) GTEST_SKIP() << "hard limit unusable";
  rlimit low = before;
  low.rlim_cur = 64;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  FdLimit f = raise_fd_soft_limit();
  rlimit after{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &after), 0);
  EXPECT_EQ(f.soft_before, 64u);
  EXPECT_EQ(f.soft, static_cast<uint64_t>(before.rlim_max));
  EXPECT_EQ(after.rlim_cur, before.rlim_max);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &before), 0);
}

TEST(FdLimit, OpenDescriptorsAreCounted) {
  const uint64_t n0 = open_fd_count();
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  EXPECT_EQ(open_fd_count(), n0 + 2);
  ::close(p[0]);
  ::close(p[1]);
  EXPECT_EQ(open_fd_count(), n0);
}

}  // namespace
}  // namespace fabkit::slurm
