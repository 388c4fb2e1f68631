#include "trainer/control/stop_signals.h"

#include <atomic>

#include "common/errors.h"

namespace fabkit::trainer::control {
namespace {

// Lock-free atomics are async-signal-safe (a plain volatile sig_atomic_t would be enough for one
// flag, but the SIGINT count needs a read-modify-write).
std::atomic<int> g_action{0};
std::atomic<int> g_sigint_count{0};
std::atomic<int> g_last_signal{0};
std::atomic<bool> g_installed{false};
static_assert(std::atomic<int>::is_always_lock_free, "signal handler needs lock-free atomics");

void raise_to(Action a) {
  int want = static_cast<int>(a);
  int cur = g_action.load();
  while (cur < want && !g_action.compare_exchange_weak(cur, want)) {
  }
}

extern "C" void on_stop_signal(int sig) {
  g_last_signal.store(sig);
  if (sig != SIGINT) {
    raise_to(Action::kStop);
    return;
  }
  if (g_sigint_count.fetch_add(1) == 0) {
    raise_to(Action::kStop);
    return;
  }
  raise_to(Action::kAbort);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGINT, &dfl, nullptr);  // the next Ctrl-C ends the process at once
}

}  // namespace

StopSignals::StopSignals() {
  FABKIT_ENFORCE(!g_installed.exchange(true), "StopSignals constructed twice in one process");
  g_action.store(0);
  g_sigint_count.store(0);
  g_last_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  // SA_RESTART: a read or write interrupted by the signal resumes instead of failing with EINTR
  // in some library that does not retry; the loop sees the flag at the next step either way.
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &sa, &old_term_);
  ::sigaction(SIGUSR1, &sa, &old_usr1_);
  ::sigaction(SIGINT, &sa, &old_int_);
}

StopSignals::~StopSignals() {
  ::sigaction(SIGTERM, &old_term_, nullptr);
  ::sigaction(SIGUSR1, &old_usr1_, nullptr);
  ::sigaction(SIGINT, &old_int_, nullptr);
  g_installed.store(false);
}

Action StopSignals::requested() const { return static_cast<Action>(g_action.load()); }

int StopSignals::last_signal() const { return g_last_signal.load(); }

}  // namespace fabkit::trainer::control
