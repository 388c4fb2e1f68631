// StopSignals with real signals: raised at this process (the handler runs before raise returns),
// and the third SIGINT in a child, which must then die of SIGINT.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "trainer/control/stop_signals.h"

namespace fabkit::trainer::control {
namespace {

TEST(StopSignals, TermAndUsr1MeanStop) {
  for (int sig : {SIGTERM, SIGUSR1}) {
    StopSignals s;
    EXPECT_EQ(s.requested(), Action::kNone);
    ASSERT_EQ(::raise(sig), 0);
    EXPECT_EQ(s.requested(), Action::kStop) << strsignal(sig);
    EXPECT_EQ(s.last_signal(), sig);
    ASSERT_EQ(::raise(sig), 0);  // again: still stop, never abort
    EXPECT_EQ(s.requested(), Action::kStop);
  }
}

TEST(StopSignals, SecondSigintAborts) {
  StopSignals s;
  ASSERT_EQ(::raise(SIGINT), 0);
  EXPECT_EQ(s.requested(), Action::kStop);
  ASSERT_EQ(::raise(SIGINT), 0);
  EXPECT_EQ(s.requested(), Action::kAbort);
  ASSERT_EQ(::raise(SIGTERM), 0);  // a later SIGTERM does not weaken it
  EXPECT_EQ(s.requested(), Action::kAbort);
}

TEST(StopSignals, ThirdSigintKillsAndHandlersAreRestored) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    StopSignals s;
    ::raise(SIGINT);
    ::raise(SIGINT);
    if (s.requested() != Action::kAbort) ::_exit(10);
    ::raise(SIGINT);  // default action now: the child dies here
    ::_exit(11);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGINT);

  // After destruction the previous disposition is back.
  struct sigaction before {};
  ::sigaction(SIGTERM, nullptr, &before);
  { StopSignals s; }
  struct sigaction after {};
  ::sigaction(SIGTERM, nullptr, &after);
  EXPECT_EQ(before.sa_handler, after.sa_handler);
}

}  // namespace
}  // namespace fabkit::trainer::control
