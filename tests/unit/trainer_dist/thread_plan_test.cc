// The thread plan: which pool gets the rank's cores, and who overrides it.
#include <gtest/gtest.h>

#include "common/errors.h"
#include "trainer/distributed/thread_plan.h"

namespace fabkit::trainer {
namespace {

ThreadFacts facts(BlasKind blas, int allowed, int local_ranks) {
  ThreadFacts f;
  f.machine_cpus = 8;
  f.allowed_cpus = allowed;
  f.local_ranks = local_ranks;
  f.blas = blas;
  return f;
}

TEST(ThreadPlan, OpenBlasPthreadGetsTheCoresAndAtenRunsOnTheCallingThread) {
  ThreadPlan p = plan_threads(facts(BlasKind::kOpenBlasPthread, 8, 1));
  EXPECT_EQ(p.intra_op, 1);
  EXPECT_EQ(p.blas, 8);
  EXPECT_NE(p.reason.find("8 allowed CPUs / 1 local rank"), std::string::npos) << p.reason;
  p = plan_threads(facts(BlasKind::kOpenBlasPthread, 8, 4));
  EXPECT_EQ(p.cores_per_rank, 2);
  EXPECT_EQ(p.intra_op, 1);
  EXPECT_EQ(p.blas, 2);
  // More ranks than CPUs: each still gets one thread, never zero.
  p = plan_threads(facts(BlasKind::kOpenBlasPthread, 2, 4));
  EXPECT_EQ(p.blas, 1);
}

TEST(ThreadPlan, OnePoolBlasGivesAtenTheCores) {
  ThreadPlan p = plan_threads(facts(BlasKind::kUnknown, 6, 2));
  EXPECT_EQ(p.intra_op, 3);
  EXPECT_FALSE(p.blas.has_value());
  p = plan_threads(facts(BlasKind::kSequential, 6, 1));
  EXPECT_EQ(p.intra_op, 6);
  EXPECT_FALSE(p.blas.has_value());
  p = plan_threads(facts(BlasKind::kOpenBlasOpenMp, 6, 1));
  EXPECT_EQ(p.intra_op, 6);
  EXPECT_EQ(p.blas, 6);  // the same OpenMP pool: the same count
}

TEST(ThreadPlan, SlurmCpusPerTaskIsTheRanksShare) {
  ThreadFacts f = facts(BlasKind::kOpenBlasPthread, 16, 4);
  f.slurm_cpus_per_task = 6;
  ThreadPlan p = plan_threads(f);
  EXPECT_EQ(p.blas, 6);
  EXPECT_NE(p.reason.find("SLURM_CPUS_PER_TASK=6"), std::string::npos) << p.reason;
  f.allowed_cpus = 4;  // never more than the mask allows
  EXPECT_EQ(plan_threads(f).blas, 4);
}

TEST(ThreadPlan, FlagsBeatTheEnvironmentWhichBeatsThePlan) {
  ThreadFacts f = facts(BlasKind::kOpenBlasPthread, 8, 1);
  f.env_omp = 3;
  f.env_openblas = 5;
  ThreadPlan p = plan_threads(f);
  EXPECT_EQ(p.intra_op, 3);
  EXPECT_EQ(p.blas, 5);
  EXPECT_NE(p.reason.find("intra-op 3 from OMP_NUM_THREADS"), std::string::npos) << p.reason;
  EXPECT_NE(p.reason.find("BLAS 5 from OPENBLAS_NUM_THREADS"), std::string::npos) << p.reason;
  f.flag_intra_op = 2;
  f.flag_blas = 7;
  p = plan_threads(f);
  EXPECT_EQ(p.intra_op, 2);
  EXPECT_EQ(p.blas, 7);
  EXPECT_NE(p.reason.find("from --threads"), std::string::npos) << p.reason;
  EXPECT_NE(p.reason.find("from --blas-threads"), std::string::npos) << p.reason;
}

TEST(ThreadPlan, BlasRequestWithoutOpenBlasIsReportedNotApplied) {
  ThreadFacts f = facts(BlasKind::kUnknown, 4, 1);
  f.flag_blas = 2;
  ThreadPlan p = plan_threads(f);
  EXPECT_FALSE(p.blas.has_value());
  EXPECT_NE(p.reason.find("ignored"), std::string::npos) << p.reason;
}

TEST(ThreadPlan, ParsesOmpStyleCounts) {
  std::string err;
  EXPECT_EQ(parse_thread_count("4", &err), 4);
  EXPECT_EQ(parse_thread_count("4,2", &err), 4);  // nested levels: the outer one
  for (const char* bad : {"", "0", "-1", "abc", "4x", " 4", ",4"}) {
    err.clear();
    EXPECT_FALSE(parse_thread_count(bad, &err).has_value()) << bad;
    EXPECT_NE(err.find("not a positive thread count"), std::string::npos) << bad;
  }
}

TEST(ThreadPlan, MalformedEnvironmentNamesTheVariable) {
  try {
    gather_thread_facts(Environment(std::map<std::string, std::string>{{"OMP_NUM_THREADS", "two"}}), 1, std::nullopt, std::nullopt);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("OMP_NUM_THREADS='two'"), std::string::npos) << e.what();
  }
  ThreadFacts f = gather_thread_facts(Environment(std::map<std::string, std::string>{{"OPENBLAS_NUM_THREADS", "3"}}), 2, 1, std::nullopt);
  EXPECT_EQ(f.env_openblas, 3);
  EXPECT_EQ(f.flag_intra_op, 1);
  EXPECT_EQ(f.local_ranks, 2);
  EXPECT_GE(f.allowed_cpus, 1);
  EXPECT_LE(f.allowed_cpus, f.machine_cpus);
}

}  // namespace
}  // namespace fabkit::trainer
