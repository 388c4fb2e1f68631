// Every rank must act on the same step: a checkpoint is a collective (each rank writes its shard
// and the manifest waits for all), and a rank that stops while the others enter the next step's
// collectives leaves them hanging until the collective timeout.
#pragma once

#include "trainer/control/action.h"
#include "trainer/distributed/comm.h"

namespace fabkit::trainer::control {

// Collective: every rank calls it at the same point of every step (or every N steps, the same N
// everywhere) with the action it saw locally (its ControlServer and StopSignals). Returns the
// strongest action any rank saw, identical on every rank.
//
// Max over ranks, not a broadcast from rank 0: SIGTERM from Slurm, or a control socket served on
// another node's first rank, reaches some ranks and not others, and a broadcast from rank 0 would
// drop what the others saw. The max is built from Comm::allreduce_sum (the one reduction every
// backend has) over one counter per action: sum > 0 means some rank asked for it. Cost: one
// all-reduce of 3 doubles (24 bytes) per call, a few tens of microseconds on a LAN.
Action agree_on_action(Comm& comm, Action local);

}  // namespace fabkit::trainer::control
