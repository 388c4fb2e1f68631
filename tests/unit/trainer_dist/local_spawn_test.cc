// spawn_local_ranks (fabtrain --nproc) started on this test executable: /proc/self/exe is the
// test binary, and a spawned copy never reaches gtest (the initializer below reports what the
// rank saw and exits). What a rank sees must be what torchrun gives; failures are named by rank
// and exit code; and a rank starts without fork(): no pthread_atfork handler runs (LibTorch and
// its OpenMP runtime register them; a fork copies their threads' locks mid-use).
#include <gtest/gtest.h>

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "trainer/distributed/local_spawn.h"

namespace fabkit::trainer {
namespace {

constexpr char kOutVar[] = "FABKIT_LOCAL_SPAWN_TEST_OUT";
constexpr char kFailRankVar[] = "FABKIT_LOCAL_SPAWN_TEST_FAIL_RANK";

// In a spawned rank (kOutVar set): write the launch variables, the process group relation and
// argv's marker to OUT/rank.RANK, then exit 3 if this is the failing rank, sleep (to be stopped
// by the parent) if another rank fails, else exit 0. Runs before main: gtest never starts.
const bool kIsSpawnedRank = [] {
  const char* out = std::getenv(kOutVar);
  if (!out) return false;
  const char* rank = std::getenv("RANK");
  std::ofstream f(std::string(out) + "/rank." + (rank ? rank : "unset"));
  for (const char* v : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                        "MASTER_PORT", "FABTRAIN_LOCAL_SPAWN"}) {
    const char* val = std::getenv(v);
    f << v << "=" << (val ? val : "(unset)") << "\n";
  }
  f << "same_pgrp=" << (getpgrp() == getpgid(getppid()) ? "yes" : "no") << "\n";
  std::string cmdline;
  std::getline(std::ifstream("/proc/self/cmdline"), cmdline, '\0');  // argv[0]
  f << "argv0=" << cmdline << "\n";
  f.close();
  const char* fail = std::getenv(kFailRankVar);
  if (fail && rank && std::string(fail) == rank) std::_Exit(3);
  if (fail) std::this_thread::sleep_for(std::chrono::seconds(30));  // stopped by SIGTERM
  std::_Exit(0);
}();

struct OutDir {
  std::filesystem::path dir;
  OutDir() {
    char tmpl[] = "/tmp/fabkit-local-spawn-XXXXXX";
    dir = ::mkdtemp(tmpl);
    ::setenv(kOutVar, dir.c_str(), 1);
  }
  ~OutDir() {
    ::unsetenv(kOutVar);
    ::unsetenv(kFailRankVar);
    std::filesystem::remove_all(dir);
  }
  std::string rank_file(int r) const {
    std::ifstream in(dir / ("rank." + std::to_string(r)));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
};

TEST(LocalSpawn, RanksGetTorchrunsVariablesInOurProcessGroup) {
  OutDir out;
  ::setenv("RANK", "7", 1);  // an inherited value must not leak into the ranks
  ::setenv("MASTER_ADDR", "10.9.9.9", 1);
  SpawnResult r = spawn_local_ranks({"fabtrain-under-test", "--marker"}, 2, 29555);
  ::unsetenv("RANK");
  ::unsetenv("MASTER_ADDR");
  EXPECT_EQ(r.exit_code, 0) << r.message;
  EXPECT_EQ(r.failed_rank, -1);
  for (int rank : {0, 1}) {
    std::string s = std::to_string(rank);
    EXPECT_EQ(out.rank_file(rank), "RANK=" + s + "\nLOCAL_RANK=" + s +
                                       "\nWORLD_SIZE=2\nLOCAL_WORLD_SIZE=2\nMASTER_ADDR=127.0.0.1\n"
                                       "MASTER_PORT=29555\nFABTRAIN_LOCAL_SPAWN=1\nsame_pgrp=yes\n"
                                       "argv0=fabtrain-under-test\n");
  }
}

TEST(LocalSpawn, AFailingRankIsNamedWithItsExitCodeAndTheOthersStopped) {
  OutDir out;
  ::setenv(kFailRankVar, "1", 1);
  auto t0 = std::chrono::steady_clock::now();
  SpawnResult r = spawn_local_ranks({"fabtrain-under-test"}, 2, 29556, /*grace_ms=*/2000);
  auto s = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - t0);
  EXPECT_EQ(r.failed_rank, 1);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.message.find("rank 1 (pid "), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("exited with code 3"), std::string::npos) << r.message;
  EXPECT_LT(s.count(), 10);  // rank 0 sleeps 30 s unless stopped
}

TEST(LocalSpawn, RanksStartWithoutFork) {
  OutDir out;
  // A fork would run this in the child and end the rank with 86 before it could exec.
  ASSERT_EQ(::pthread_atfork(nullptr, nullptr, [] { std::_Exit(86); }), 0);
  SpawnResult r = spawn_local_ranks({"fabtrain-under-test"}, 2, 29557);
  EXPECT_EQ(r.exit_code, 0) << r.message;
  EXPECT_NE(out.rank_file(0), "");
  EXPECT_NE(out.rank_file(1), "");
}

}  // namespace
}  // namespace fabkit::trainer
