// agree_on_action over a fake Comm whose ranks are threads summing through shared memory: every
// rank must return the strongest action any rank saw.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/unit/trainer_control/fake_comm.h"
#include "trainer/control/agree.h"

namespace fabkit::trainer::control {
namespace {

std::vector<Action> run_ranks(const std::vector<Action>& local) {
  FakeCommGroup g(static_cast<int>(local.size()));
  std::vector<Action> out(local.size(), Action::kNone);
  std::vector<std::thread> threads;
  for (size_t r = 0; r < local.size(); ++r)
    threads.emplace_back([&, r] {
      ThreadComm c(&g, static_cast<int>(r));
      out[r] = agree_on_action(c, local[r]);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(g.allreduce_calls, 1);
  return out;
}

TEST(AgreeOnAction, EveryRankGetsTheStrongest) {
  using A = Action;
  struct Case {
    std::vector<A> local;
    A want;
  } cases[] = {
      {{A::kNone, A::kNone, A::kNone, A::kNone}, A::kNone},
      {{A::kNone, A::kNone, A::kStop, A::kNone}, A::kStop},  // SIGTERM reached rank 2 first
      {{A::kSave, A::kNone, A::kNone, A::kNone}, A::kSave},
      {{A::kSave, A::kStop, A::kNone, A::kSave}, A::kStop},
      {{A::kStop, A::kAbort, A::kSave, A::kStop}, A::kAbort},
      {{A::kSave, A::kSave, A::kSave, A::kSave}, A::kSave},
      {{A::kAbort}, A::kAbort},
  };
  for (const Case& c : cases) {
    std::vector<A> got = run_ranks(c.local);
    for (size_t r = 0; r < got.size(); ++r)
      EXPECT_EQ(got[r], c.want) << "rank " << r << " of " << got.size() << ": got "
                                << to_string(got[r]) << ", want " << to_string(c.want);
  }
}

}  // namespace
}  // namespace fabkit::trainer::control
