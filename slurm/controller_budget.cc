#include "slurm/controller_budget.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "common/errors.h"

namespace fabkit::slurm {
namespace {

constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();
constexpr int kMaxUnits = 1 << 20;  // more pair runs than any round has

std::string count_text(uint64_t v) { return v == kUnbounded ? "unlimited" : std::to_string(v); }

uint64_t units(uint64_t limit, uint64_t used, uint64_t reserve, int per_unit) {
  if (limit == kUnbounded || limit == 0) return kUnbounded;  // 0: not known, not a bound
  const uint64_t taken = used + reserve;
  return limit > taken ? (limit - taken) / static_cast<uint64_t>(per_unit) : 0;
}

int clamp_units(uint64_t v) {
  return static_cast<int>(std::clamp<uint64_t>(v, 1, static_cast<uint64_t>(kMaxUnits)));
}

}  // namespace

ParallelBudget parallel_budget(const ControllerLimits& l) {
  struct Bound {
    uint64_t pairs, nodes;
    std::string what, fix;
  };
  std::vector<Bound> bounds;
  bounds.push_back({units(l.fd_soft, l.fds_open, kFdReserve, kFdsPerPairRun),
                    units(l.fd_soft, l.fds_open, kFdReserve, kFdsPerNodeCheck),
                    "RLIMIT_NOFILE " + count_text(l.fd_soft) + " (hard " + count_text(l.fd_hard) +
                        ", " + std::to_string(l.fds_open) + " open; " +
                        std::to_string(kFdsPerPairRun) + " descriptors per pair run)",
                    l.fd_soft < l.fd_hard
                        ? "ulimit -n " + count_text(l.fd_hard) + " before fabcheck"
                        : "raise the hard limit (limits.conf `nofile`, systemd LimitNOFILE=) "
                          "and ulimit -n before fabcheck"});
  if (l.nproc_soft)
    bounds.push_back({units(*l.nproc_soft, l.tasks_now, kTaskReserve, kTasksPerPairRun),
                      units(*l.nproc_soft, l.tasks_now, kTaskReserve, kTasksPerNodeCheck),
                      "RLIMIT_NPROC " + count_text(*l.nproc_soft) + " (" +
                          std::to_string(l.tasks_now) + " threads on the host; " +
                          std::to_string(kTasksPerPairRun) + " per pair run)",
                      "ulimit -u (limits.conf `nproc`) before fabcheck"});
  for (auto [limit, name] : {std::pair{l.threads_max, "kernel.threads-max"},
                             std::pair{l.pid_max, "kernel.pid_max"}})
    bounds.push_back({units(limit, l.tasks_now, kTaskReserve, kTasksPerPairRun),
                      units(limit, l.tasks_now, kTaskReserve, kTasksPerNodeCheck),
                      std::string(name) + " " + count_text(limit) + " (" +
                          std::to_string(l.tasks_now) + " threads on the host; " +
                          std::to_string(kTasksPerPairRun) + " per pair run)",
                      std::string("sysctl -w ") + name + "=..."});
  ParallelBudget b;
  const auto tight = std::min_element(bounds.begin(), bounds.end(),
                                      [](const Bound& x, const Bound& y) { return x.pairs < y.pairs; });
  uint64_t nodes = kUnbounded;
  for (const auto& x : bounds) nodes = std::min(nodes, x.nodes);
  b.pair_runs = clamp_units(tight->pairs);
  b.node_checks = clamp_units(nodes);
  b.bound = tight->what;
  b.fix = tight->fix;
  return b;
}

ParallelChoice choose_parallel(int requested, int widest_round, int nodes, const ParallelBudget& b) {
  ParallelChoice c;
  const int widest = std::max(1, widest_round);
  if (requested > b.pair_runs)
    throw UsageError("--max-parallel " + std::to_string(requested) + ": this controller can hold " +
                     std::to_string(b.pair_runs) + " pair runs at once, bound by " + b.bound +
                     "; " + b.fix + ", or give --max-parallel " + std::to_string(b.pair_runs) +
                     " or less");
  if (requested > 0) {
    c.pair_runs = std::min(requested, widest);
    c.node_checks = std::max(1, std::min(requested, nodes));
    return c;
  }
  c.pair_runs = std::min(widest, b.pair_runs);
  c.node_checks = std::max(1, std::min(nodes, b.node_checks));
  c.limited = c.pair_runs < widest || c.node_checks < nodes;
  if (c.limited)
    c.why = std::to_string(c.pair_runs) + " of the widest round's " + std::to_string(widest) +
            " pair runs (and " + std::to_string(c.node_checks) + " of " + std::to_string(nodes) +
            " node checks) at once, bound by " + b.bound + "; " + b.fix;
  return c;
}

}  // namespace fabkit::slurm
