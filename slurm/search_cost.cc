#include "slurm/search_cost.h"

#include "slurm/group_rule.h"

#include <algorithm>
#include <cmath>

namespace fabkit::slurm {
namespace {

double waves(int groups, const SearchPolicy& p) {
  if (p.max_parallel <= 0 || groups <= p.max_parallel) return 1;
  return std::ceil(static_cast<double>(groups) / p.max_parallel);
}

int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

}  // namespace

uint64_t group_test_bytes(int n, const SearchPolicy& policy) {
  if (policy.fixed_bytes > 0) return policy.fixed_bytes;
  return static_cast<uint64_t>(std::max(n, 1)) * policy.chunk_bytes;
}

double ring_allreduce_s(int n, double bytes, const RingCostModel& m) {
  if (n < 2) return 0;
  return 2.0 * (n - 1) * (m.alpha_s + bytes / (n * m.bandwidth_Bps));
}

double expected_ring_busbw_gbit_s(int n, double bytes, double link_gbit_s, double alpha_s) {
  if (n < 2 || bytes <= 0) return link_gbit_s;
  const double bytes_per_s = link_gbit_s * 1e9 / 8;
  return link_gbit_s / (1 + alpha_s * bytes_per_s * n / bytes);
}

double group_test_threshold_gbit_s(int n, uint64_t bytes, double reference_gbit_s, double fraction,
                                   double alpha_s) {
  return fraction *
         expected_ring_busbw_gbit_s(n, static_cast<double>(bytes), reference_gbit_s, alpha_s);
}

bool group_test_positive(const GroupTestReading& r, double reference_gbit_s, double fraction,
                         double alpha_s) {
  return group_run_positive(
      GroupRunFigure{r.failed, r.min_busbw_gbps},
      group_test_threshold_gbit_s(r.ranks, r.bytes, reference_gbit_s, fraction, alpha_s));
}

double group_test_s(int n, const SearchPolicy& p, const RingCostModel& m) {
  if (n < 2) return 0;
  const double rings = n / 2;
  const double ring =
      m.ring_start_s + (p.warmup_iters + p.iters) *
                           ring_allreduce_s(n, static_cast<double>(group_test_bytes(n, p)), m);
  return m.group_s + rings * ring;
}

double search_first_stage_s(int n, int blocks, const SearchPolicy& p, const RingCostModel& m) {
  const int g = std::clamp(blocks, 1, std::max(1, n / 2));
  const int size = (n + g - 1) / g;
  double s = waves(g, p) * group_test_s(size, p, m);
  if (g >= 2) {
    const int rounds = g % 2 ? g : g - 1;
    s += rounds * waves(g / 2, p) * group_test_s(std::min(n, 2 * size), p, m);
  }
  return s;
}

int choose_search_blocks(int n, const SearchPolicy& p, const RingCostModel& m) {
  int best = 1;
  double best_s = search_first_stage_s(n, 1, p, m);
  for (int g = 2; g <= n / 2; ++g) {
    double s = search_first_stage_s(n, g, p, m);
    if (s < best_s) {
      best_s = s;
      best = g;
    }
  }
  return best;
}

RingCostModel ring_cost_model(double alpha_s, double reference_gbit_s) {
  RingCostModel m;
  m.alpha_s = alpha_s;
  m.bandwidth_Bps = reference_gbit_s * 1e9 / 8;
  return m;
}

SearchPolicy resolve_search_policy(int n, SearchPolicy p, int max_parallel,
                                   const RingCostModel& m) {
  p.max_parallel = max_parallel;
  if (p.blocks <= 0) p.blocks = choose_search_blocks(n, p, m);
  p.blocks = effective_search_blocks(n, p);
  return p;
}

double search_cost_s(int n, const SearchPolicy& policy, const RingCostModel& m) {
  SearchPolicy p = policy;
  if (p.blocks <= 0) p.blocks = choose_search_blocks(n, p, m);
  const int g = effective_search_blocks(n, p);
  const int size = (n + g - 1) / g;
  const int s = g == 1 ? n : std::min(n, 2 * size);
  double t = m.agents_start_s_per_host * n + search_first_stage_s(n, g, p, m);
  // One fault: the re-test and the bisection, every round at most a group of s (measured twice
  // when positive), then the pair alone repeats - 1 more times and the node test (pairs).
  RingCostModel slow = m;  // the tests that hold the fault: below the bar
  slow.bandwidth_Bps =
      m.bandwidth_Bps * kFaultBelowBar * std::clamp(m.fault_bandwidth_fraction, 1e-6, 1.0);
  const int bisect = 1 + 2 * ceil_log2((s + 1) / 2) + 1;
  t += (1 + bisect) * 2 * group_test_s(s, p, slow);
  t += p.repeats * 2 * group_test_s(2, p, slow);
  // The sweep of the end taken out: one block and the end per round, g rounds.
  t += g * group_test_s(std::min(n, size + 1), p, m);
  return t;
}

}  // namespace fabkit::slurm
