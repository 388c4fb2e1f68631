// fabtrain's collective deadline while the host is blocked outside any wait: a hung all-gather
// whose rank's host sits in a call that never returns (a CUDA launch behind the hung collective,
// or a blocking copy) is still named, with its step, before the backend's watchdog would abort.
// The group polls completion as the NCCL comm does; its work never completes and never returns
// from wait(), as a collective a peer never joins.
#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "trainer/distributed/collective_phase.h"
#include "trainer/distributed/comm_c10d.h"

namespace fabkit::trainer {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

class HungWork : public c10d::Work {
 public:
  explicit HungWork(std::shared_future<void> released) : released_(std::move(released)) {}
  bool isCompleted() override { return false; }
  bool wait(std::chrono::milliseconds) override {
    released_.wait();
    return false;
  }

 private:
  std::shared_future<void> released_;
};

// The NCCL comm's way of waiting (poll_completion_), over an in-process store.
class PolledGroup : public C10dGroup {
 public:
  PolledGroup(const CommOptions& o, const c10::intrusive_ptr<c10d::Store>& store)
      : C10dGroup("NCCL", o) {
    poll_completion_ = true;
    watch_through(store);
  }
  std::string failure_message(const char* op, size_t, const std::string& cause) const override {
    return std::string(op) + " failed: " + cause;
  }
};

struct Said {
  std::promise<std::string> text;
  Clock::time_point at;
};

TEST(CollectiveDeadline, AHungAllgatherIsNamedWithItsStepWhileTheHostIsBlockedElsewhere) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  store->set("host/0", bytes("node9 pid 77"));  // rank 0 never reaches the all-gather
  CommOptions o;
  o.rank = 1;
  o.world_size = 2;
  o.collective_timeout_ms = 300;
  Said said;
  std::atomic<int> handed{0};
  set_dead_group_handler([&](const CommError& e) {
    if (handed++ == 0) {
      said.at = Clock::now();
      said.text.set_value(e.what());
    }
  });
  std::promise<void> release;
  const std::shared_future<void> released = release.get_future().share();
  {
    PolledGroup group(o, store);
    set_collective_phase("step 7");
    const auto issued = Clock::now();
    std::thread host([&] {
      CommRequestPtr r = group.issue(
          "allgather", 4096, [&] { return C10dWorks{c10::make_intrusive<HungWork>(released)}; },
          nullptr,
          /*host_wait=*/false);
      // The host never reaches r->wait(): it is stuck in a call that does not return.
      released.wait();
    });
    std::future<std::string> f = said.text.get_future();
    const bool named = f.wait_for(milliseconds(8000)) == std::future_status::ready;
    release.set_value();
    host.join();
    set_dead_group_handler(nullptr);
    set_collective_phase("");
    ASSERT_TRUE(named) << "8 s after a 300 ms deadline nothing named the hung all-gather: only "
                          "a wait the host never reached watched it";
    const std::string text = f.get();
    EXPECT_NE(text.find("NCCL allgather of step 7 (collective #1, 4096 elements) on rank 1/2"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("did not complete within 300 ms (--collective-timeout-ms)"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("rank 0 (node9 pid 77) did not arrive"), std::string::npos) << text;
    EXPECT_GE(said.at - issued, milliseconds(300));
    // The deadline, the watcher's period and the wait for the peers' posts (200 ms here).
    EXPECT_LT(said.at - issued, milliseconds(300 + 100 + 200 + 1500));
    EXPECT_TRUE(group.dead());
    // A handler that returns: the host's next collective throws the same error.
    try {
      group.issue(
          "allreduce", 1, [] { return C10dWorks{}; }, nullptr);
      ADD_FAILURE() << "a collective after the deadline was issued";
    } catch (const CommError& e) {
      EXPECT_EQ(std::string(e.what()), text);
    }
  }
  EXPECT_EQ(handed, 1);
}

TEST(CollectiveDeadline, CollectivesNameNoStepWhenNoPhaseIsSet) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  CommOptions o;
  o.rank = 1;
  o.world_size = 2;
  o.collective_timeout_ms = 200;
  std::promise<std::string> said;
  std::atomic<int> handed{0};
  set_dead_group_handler([&](const CommError& e) {
    if (handed++ == 0) said.set_value(e.what());
  });
  std::promise<void> release;
  const std::shared_future<void> released = release.get_future().share();
  {
    PolledGroup group(o, store);
    CommRequestPtr r = group.issue(
        "barrier", 0, [&] { return C10dWorks{c10::make_intrusive<HungWork>(released)}; }, nullptr,
        /*host_wait=*/false);
    std::future<std::string> f = said.get_future();
    const bool named = f.wait_for(milliseconds(8000)) == std::future_status::ready;
    release.set_value();
    set_dead_group_handler(nullptr);
    ASSERT_TRUE(named);
    EXPECT_NE(f.get().find("NCCL barrier (collective #1, 0 elements)"), std::string::npos);
  }
}

}  // namespace
}  // namespace fabkit::trainer
