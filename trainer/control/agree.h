// Every rank must act on the same step: a checkpoint is a collective (each rank writes its shard
// and the manifest waits for all), and a rank that stops while the others enter the next step's
// collectives leaves them hanging until the collective timeout.
#pragma once

#include <array>

#include "trainer/control/action.h"
#include "trainer/distributed/comm.h"

namespace fabkit::trainer::control {

// The agreement is a max over ranks, not a broadcast from rank 0: SIGTERM from Slurm, or a
// control socket served on another node's first rank, reaches some ranks and not others, and a
// broadcast from rank 0 would drop what the others saw. The max is a sum (Comm::allreduce_sum,
// the one reduction every backend has) over one vote per action: sum > 0 means some rank asked.
// Doubles count exactly to 2^53 ranks.
inline constexpr size_t kVotes = 3;  // save, stop, abort
using Votes = std::array<double, kVotes>;

// This rank's votes: 1 for the action it saw locally (its ControlServer and StopSignals), else 0.
Votes vote_for(Action local);
// The strongest action with a vote in `summed` (kVotes sums over the ranks), identical on every
// rank that holds the same sums.
Action agreed_action(const double* summed);

// Collective: every rank calls it at the same point of every step (or every N steps, the same N
// everywhere) with the action it saw locally. Returns the strongest action any rank saw,
// identical on every rank. Cost: one all-reduce of 3 doubles (24 bytes). The training loop
// does not call it: its votes ride in the step's own collective (trainer/app/run_monitor.h).
Action agree_on_action(Comm& comm, Action local);

}  // namespace fabkit::trainer::control
