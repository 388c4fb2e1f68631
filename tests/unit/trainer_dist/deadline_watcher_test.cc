// The collective deadline's watcher thread (deadline_watcher.h), without c10d: it meets a
// deadline whatever the watching thread is doing, and only for what did not complete.
#include "trainer/distributed/deadline_watcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

namespace fabkit::trainer {
namespace {

using std::chrono::milliseconds;
using Clock = DeadlineWatcher::Clock;

TEST(DeadlineWatcher, ExpiresAtTheDeadlineWhileTheIssuingThreadIsBlocked) {
  DeadlineWatcher watcher(milliseconds(10));
  std::promise<Clock::time_point> expired;
  const Clock::time_point deadline = Clock::now() + milliseconds(200);
  watcher.watch({deadline, [] { return false; }, [&] { expired.set_value(Clock::now()); }});
  // This thread now blocks (as a host in a CUDA launch would) and looks at nothing.
  std::future<Clock::time_point> f = expired.get_future();
  ASSERT_EQ(f.wait_for(milliseconds(5000)), std::future_status::ready)
      << "the deadline passed and nothing expired";
  const Clock::time_point at = f.get();
  EXPECT_GE(at, deadline);
  EXPECT_LT(at, deadline + milliseconds(1000));
  // The watch is dropped once the watcher's pass that expired it ends, which may be just after
  // the callback above returned: wait up to a second for it, not for nothing.
  const Clock::time_point until = Clock::now() + milliseconds(1000);
  while (watcher.watched() != 0 && Clock::now() < until)
    std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(watcher.watched(), 0u);
}

TEST(DeadlineWatcher, ACompletedCollectiveNeverExpiresAndIsDropped) {
  DeadlineWatcher watcher(milliseconds(10));
  std::atomic<bool> done{false};
  std::atomic<int> expiries{0};
  watcher.watch(
      {Clock::now() + milliseconds(150), [&] { return done.load(); }, [&] { ++expiries; }});
  EXPECT_EQ(watcher.watched(), 1u);
  done = true;
  std::this_thread::sleep_for(milliseconds(400));
  EXPECT_EQ(expiries, 0);
  EXPECT_EQ(watcher.watched(), 0u);
}

TEST(DeadlineWatcher, EachWatchExpiresOnceAndOnlyItsOwn) {
  DeadlineWatcher watcher(milliseconds(10));
  std::atomic<int> hung{0}, fine{0};
  const auto deadline = Clock::now() + milliseconds(50);
  watcher.watch({deadline, [] { return false; }, [&] { ++hung; }});
  watcher.watch({deadline, [] { return true; }, [&] { ++fine; }});
  std::this_thread::sleep_for(milliseconds(400));
  EXPECT_EQ(hung, 1);
  EXPECT_EQ(fine, 0);
}

}  // namespace
}  // namespace fabkit::trainer
