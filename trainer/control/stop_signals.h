// Signals that ask a run to end: SIGTERM (what `scancel` and Slurm's time limit send) and SIGUSR1
// (what `sbatch --signal=USR1@120` sends before the limit) mean `stop`: checkpoint, then exit
// cleanly. The first SIGINT (Ctrl-C) also means `stop`; the second means `abort`; a third, after
// the handler has given SIGINT back its default action, kills the process at once (for a loop
// stuck in a collective that never reaches the next step boundary).
//
// The handler only stores into a lock-free atomic (async-signal-safe) and, on the second SIGINT,
// calls sigaction to restore the default (also async-signal-safe); the loop reads the atomic at
// step boundaries.
#pragma once

#include <csignal>

#include "trainer/control/action.h"

namespace fabkit::trainer::control {

class StopSignals {
 public:
  // Installs the handlers (one StopSignals per process: a second one throws InternalError) and
  // restores the previous dispositions on destruction.
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The strongest action the signals asked for so far (kNone, kStop or kAbort). Sticky: a stop
  // stays requested until the process ends.
  Action requested() const;
  // The signal that caused it, for the log line ("stopping: SIGTERM"); 0 when none.
  int last_signal() const;

 private:
  struct sigaction old_term_ {
  }, old_usr1_{}, old_int_{};
};

}  // namespace fabkit::trainer::control
