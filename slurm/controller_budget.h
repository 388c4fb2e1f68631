// How many pair runs (and node checks) the cluster controller can hold at once on this host, from
// its limits: one thread and two launcher children per pair run, three descriptors per live agent
// (docs/cluster.md, "The controller at scale", has the design and the measured costs). Pure: the
// limits come in (controller_limits.h gathers them), the budget comes out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace fabkit::slurm {

// Per unit on the controller: an agent holds its launcher's stdout pipe, its stderr file and its
// control socket (3: bench/cluster/controller_scale.py saw 771 descriptors at 128 pair runs at
// once); while the second agent of a pair starts, the first's 3 and the spawn's 5 (stdin and
// stdout pipes, both ends, and the stderr file) are open at once. A node check holds the same 5
// while it starts.
inline constexpr int kFdsPerPairRun = 8;
inline constexpr int kFdsPerNodeCheck = 5;
// The pair's controller thread, the two resolver threads of its peers step while they run
// (fabric/pair/session_peers.cc: getaddrinfo cannot be cancelled, so each lookup has a thread)
// and its two launcher processes (ssh, srun or the template's command: counted once, their own
// threads on top); a node check's thread and its process.
inline constexpr int kTasksPerPairRun = 5;
inline constexpr int kTasksPerNodeCheck = 2;
// Left for everything else the controller and the host open meanwhile (the report files, the
// libraries, a search round's extra agents are budgeted by the search itself).
inline constexpr uint64_t kFdReserve = 64;
inline constexpr uint64_t kTaskReserve = 256;

struct ControllerLimits {
  uint64_t fd_soft = 1024, fd_hard = 1024;  // RLIMIT_NOFILE after the raise (UINT64_MAX: none)
  uint64_t fds_open = 0;                    // this process's descriptors now
  std::optional<uint64_t> nproc_soft;       // RLIMIT_NPROC; unset where it does not apply (root)
  uint64_t threads_max = 0;                 // /proc/sys/kernel/threads-max (0: unknown)
  uint64_t pid_max = 0;                     // /proc/sys/kernel/pid_max (0: unknown)
  uint64_t tasks_now = 0;                   // threads on the host now (/proc/loadavg)
};

struct ParallelBudget {
  int pair_runs = 1;    // at least 1: one pair run is always tried
  int node_checks = 1;
  std::string bound;    // the limit that sets pair_runs, with its numbers
  std::string fix;      // how to raise it
};

ParallelBudget parallel_budget(const ControllerLimits& l);

struct ParallelChoice {
  int pair_runs = 1;    // --max-parallel as it runs: never more than the widest round
  int node_checks = 1;  // never more than the nodes
  bool limited = false; // the default asked for every pair of a round and the budget said less
  std::string why;      // limited: the budget's bound and fix
};

// requested 0 (the default): every pair of the widest round at once and every node check at
// once, or the largest the budget allows. A request above the budget throws UsageError naming
// the limit, its numbers and the fix (ulimit -n, or a smaller --max-parallel).
ParallelChoice choose_parallel(int requested, int widest_round, int nodes, const ParallelBudget& b);

}  // namespace fabkit::slurm
