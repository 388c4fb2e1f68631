// fabtrain's own collective deadline on Gloo ranks (threads on 127.0.0.1): a rank that does not
// arrive is named on every rank that waits for it, within the timeout; a pause of one rank before
// pause_barrier() trips nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <algorithm>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trainer/app/device_setup.h"
#include "trainer/distributed/comm.h"
#include "trainer/distributed/local_spawn.h"
#include "tests/unit/trainer_dist/gloo_rank_threads.h"

namespace fabkit::trainer {
namespace {

using Clock = std::chrono::steady_clock;

struct RankResult {
  std::string error;  // empty: fn returned
  double seconds = 0;
};

// fn(comm) on `world` Gloo ranks as threads; what each threw and when. timeout_of_rank, where
// given, sets a rank's own collective timeout (ranks may be started with different ones).
std::vector<RankResult> run_ranks_timed(int world, int collective_timeout_ms,
                                        const std::function<void(Comm&)>& fn, bool nccl = false,
                                        const std::function<int(int)>& timeout_of_rank = nullptr) {
  const uint16_t port = pick_free_port();
  std::vector<std::thread> threads;
  std::vector<RankResult> results(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      std::unique_ptr<Comm> comm;
      try {
        CommOptions o = thread_rank_options(
            r, world, port, timeout_of_rank ? timeout_of_rank(r) : collective_timeout_ms);
        if (nccl) o.cuda_device = r;
        comm = nccl ? make_nccl_comm(o) : make_gloo_comm(o);
        const auto t0 = Clock::now();
        try {
          fn(*comm);
        } catch (const std::exception& e) {
          results[static_cast<size_t>(r)].error = e.what();
        }
        results[static_cast<size_t>(r)].seconds =
            std::chrono::duration<double>(Clock::now() - t0).count();
      } catch (const std::exception& e) {
        results[static_cast<size_t>(r)].error = std::string("setup: ") + e.what();
      }
      // A failed Gloo group still holds pending work its destructor would wait for: leave it to
      // the process's end, as fabtrain does (its main exits without destructors after a
      // CommError). A failed NCCL group is aborted by its destructor (ncclCommAbort), which ends
      // the kernel still waiting on the GPU.
      if (comm && !nccl && !results[static_cast<size_t>(r)].error.empty()) comm.release();
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

TEST(CommDeadline, TheRankThatDoesNotArriveIsNamedOnEveryOtherRank) {
  // Rank 1 hangs before the third allreduce (as a rank stuck outside the collectives does);
  // ranks 0 and 2 must fail with fabtrain's error naming rank 1, within the 1.5 s timeout.
  const int timeout_ms = 1500;
  const auto results = run_ranks_timed(3, timeout_ms, [](Comm& c) {
    double x = 1;
    for (int i = 0; i < 2; ++i) c.allreduce_sum(&x, 1);
    if (c.rank() == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(6000));
      return;
    }
    c.allreduce_sum(&x, 1);
  });
  for (int r : {0, 2}) {
    const RankResult& res = results[static_cast<size_t>(r)];
    SCOPED_TRACE("rank " + std::to_string(r) + ": " + res.error);
    EXPECT_NE(res.error.find("Gloo allreduce(f64) (collective #3"), std::string::npos);
    EXPECT_NE(res.error.find("did not complete within 1500 ms (--collective-timeout-ms)"),
              std::string::npos);
    // Named with its host and pid (all threads share this process's).
    EXPECT_NE(res.error.find("rank 1 ("), std::string::npos);
    EXPECT_NE(res.error.find(" pid "), std::string::npos);
    EXPECT_NE(res.error.find("did not arrive"), std::string::npos);
    EXPECT_NE(res.error.find("rank(s) " + std::to_string(2 - r) + " were waiting"),
              std::string::npos);
    // Within the timeout plus the naming's grace (375 ms here) and slack for a loaded machine.
    EXPECT_LT(res.seconds, timeout_ms / 1000.0 + 3.0);
    EXPECT_GE(res.seconds, timeout_ms / 1000.0 - 0.1);
  }
  EXPECT_EQ(results[1].error, "");
}

// The dead-group handler (fabtrain's: report and _Exit before unwinding) gets each waiting rank's
// named error before it is thrown; one that returns lets the error be thrown as before. The rank
// that was only late (rank 1) never calls it.
TEST(CommDeadline, TheDeadGroupHandlerHearsTheNamedErrorBeforeItIsThrown) {
  std::mutex m;
  std::vector<std::string> heard;
  set_dead_group_handler([&](const CommError& e) {
    const std::lock_guard<std::mutex> lock(m);
    heard.push_back(e.what());
  });
  const auto results = run_ranks_timed(3, 1000, [](Comm& c) {
    double x = 1;
    c.allreduce_sum(&x, 1);
    if (c.rank() == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(4000));
      return;
    }
    c.allreduce_sum(&x, 1);
  });
  set_dead_group_handler(nullptr);
  ASSERT_EQ(heard.size(), 2u);
  std::sort(heard.begin(), heard.end());
  std::vector<std::string> thrown{results[0].error, results[2].error};
  std::sort(thrown.begin(), thrown.end());
  EXPECT_EQ(heard, thrown);
  for (const auto& h : heard) EXPECT_NE(h.find("rank 1 ("), std::string::npos) << h;
  EXPECT_EQ(results[1].error, "");
}

// --reduce-dtype bf16's reduce-scatter waits under the same deadline: a rank that never sends its
// bf16 chunks is named on the one that waits for them.
TEST(CommDeadline, Bf16ReduceScatterNamesTheRankThatDoesNotArrive) {
  const int timeout_ms = 1500;
  const auto results = run_ranks_timed(2, timeout_ms, [](Comm& c) {
    std::vector<uint16_t> in(2 * 64, 0x3f80);  // bf16 1.0
    std::vector<float> out(64, 0.0f);
    c.reduce_scatter_add_bf16(in.data(), 64, out.data());
    EXPECT_EQ(out[63], 2.0f);
    if (c.rank() == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5000));
      return;
    }
    c.reduce_scatter_add_bf16(in.data(), 64, out.data());
  });
  const RankResult& r0 = results[0];
  EXPECT_NE(r0.error.find("Gloo reduce-scatter(bf16) (collective #2"), std::string::npos)
      << r0.error;
  EXPECT_NE(r0.error.find("did not complete within 1500 ms (--collective-timeout-ms)"),
            std::string::npos)
      << r0.error;
  EXPECT_NE(r0.error.find("rank 1 ("), std::string::npos) << r0.error;
  EXPECT_LT(r0.seconds, timeout_ms / 1000.0 + 3.0);
  EXPECT_EQ(results[1].error, "");
}

TEST(CommDeadline, ARankBehindIsNamedWithTheCollectiveItWasLastSeenAt) {
  // Rank 2 waits at collective #1 long enough to post it (ranks 0 and 1 are late there), then
  // hangs before #2: ranks 0 and 1 must report it as last seen at #1.
  const auto results = run_ranks_timed(3, 1000, [](Comm& c) {
    double x = 1;
    if (c.rank() != 2) std::this_thread::sleep_for(std::chrono::milliseconds(600));
    c.allreduce_sum(&x, 1);
    if (c.rank() == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5000));
      return;
    }
    c.allreduce_sum(&x, 1);
  });
  for (int r : {0, 1}) {
    const std::string& e = results[static_cast<size_t>(r)].error;
    EXPECT_NE(e.find("allreduce(f64) (collective #2"), std::string::npos) << e;
    EXPECT_NE(e.find("rank 2 ("), std::string::npos) << e;
    EXPECT_NE(e.find("last seen waiting at collective #1 (allreduce(f64))"), std::string::npos)
        << e;
  }
}

TEST(CommDeadline, ARankWaitingAtTheCollectiveThatHasNotTimedOutIsToldFromOneThatDid) {
  // Rank 2 hangs before collective #2. Rank 1 waits there with a 4 s deadline (its waiting post
  // goes up after 1 s), rank 0 with 1.5 s: at rank 0's deadline rank 1 has reached #2 but not
  // timed out on it, and is said to be so, not counted among those that timed out. At rank 1's
  // own deadline rank 0's timed-out post is read as such.
  const auto results = run_ranks_timed(
      3, 1500,
      [](Comm& c) {
        double x = 1;
        c.allreduce_sum(&x, 1);
        if (c.rank() == 2) {
          std::this_thread::sleep_for(std::chrono::milliseconds(7000));
          return;
        }
        c.allreduce_sum(&x, 1);
      },
      false, [](int r) { return r == 1 ? 4000 : 1500; });
  const std::string& e0 = results[0].error;
  EXPECT_NE(e0.find("did not complete within 1500 ms"), std::string::npos) << e0;
  EXPECT_NE(e0.find("rank 2 ("), std::string::npos) << e0;
  EXPECT_NE(e0.find("rank(s) 1 reached this collective but did not time out on it within 375 ms "
                    "of this rank"),
            std::string::npos)
      << e0;
  EXPECT_EQ(e0.find("were waiting at this collective too"), std::string::npos) << e0;
  const std::string& e1 = results[1].error;
  EXPECT_NE(e1.find("did not complete within 4000 ms"), std::string::npos) << e1;
  EXPECT_NE(e1.find("rank 2 ("), std::string::npos) << e1;
  EXPECT_NE(e1.find("rank(s) 0 were waiting at this collective too"), std::string::npos) << e1;
  EXPECT_EQ(results[2].error, "");
}

TEST(CommDeadline, APauseOfRankZeroBeforePauseBarrierTripsNothing) {
  // Rank 0 "writes a checkpoint" for 2.5x the collective timeout while the others wait at the
  // pause barrier; then a collective runs as usual.
  const auto results = run_ranks_timed(3, 800, [](Comm& c) {
    double x = 1;
    c.allreduce_sum(&x, 1);
    if (c.rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2000));
    c.pause_barrier("a test pause");
    c.allreduce_sum(&x, 1);
    EXPECT_EQ(x, 9.0);
  });
  for (size_t r = 0; r < results.size(); ++r) EXPECT_EQ(results[r].error, "") << "rank " << r;
}

// The same on NCCL, one GPU per rank: fabtrain's deadline (polled CUDA events) must name rank 1
// long before ProcessGroupNCCL's watchdog (set to the timeout + max(timeout, 60 s)) would abort
// the process.
TEST(CommDeadline, NcclNamesTheRankThatDoesNotArriveBeforeTheWatchdog) {
  const auto gpus = visible_cuda_devices();
  if (gpus.size() < 2) {
    GTEST_SKIP() << "needs 2 CUDA devices (two ranks cannot share one GPU in an NCCL "
                    "communicator); this LibTorch sees "
                 << gpus.size();
  }
  const auto results = run_ranks_timed(
      2, 3000,
      [](Comm& c) {
        double x = 1;  // host memory: staged, so the host waits with the deadline
        c.allreduce_sum(&x, 1);
        if (c.rank() == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(8000));
          return;
        }
        c.allreduce_sum(&x, 1);
      },
      /*nccl=*/true);
  const RankResult& r0 = results[0];
  EXPECT_NE(r0.error.find("NCCL allreduce(f64) (collective #2"), std::string::npos) << r0.error;
  EXPECT_NE(r0.error.find("rank 1 ("), std::string::npos) << r0.error;
  EXPECT_LT(r0.seconds, 3.0 + 4.0);
  EXPECT_EQ(results[1].error, "");
}

}  // namespace
}  // namespace fabkit::trainer
