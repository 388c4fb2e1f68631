#include "slurm/sim/group_model.h"

#include <algorithm>

#include "fabric/pair/group_controller.h"
#include "slurm/group_rule.h"
#include "slurm/search_cost.h"

namespace fabkit::slurm::sim {

double ring_busbw_gbps(const GroupModel& m, int n, double min_gbit_s) {
  const double bytes = static_cast<double>(group_test_bytes(n, m.policy));
  const double chunk = bytes / n, bytes_per_s = min_gbit_s * 1e9 / 8;
  return chunk / (m.alpha_s + chunk / bytes_per_s) / 1e9;
}

double ring_seconds(const GroupModel& m, int n, double min_gbit_s) {
  const double bytes = static_cast<double>(group_test_bytes(n, m.policy));
  const double chunk = bytes / n, bytes_per_s = min_gbit_s * 1e9 / 8;
  return (m.policy.warmup_iters + m.policy.iters) * 2.0 * (n - 1) * (m.alpha_s + chunk / bytes_per_s);
}

SimGroupTester::SimGroupTester(const Fabric& fabric, const GroupModel& model,
                               double reference_gbit_s, Rng rng)
    : fabric_(fabric), model_(model), reference_(reference_gbit_s), rng_(rng) {}

double SimGroupTester::seconds() const {
  double s = 0;
  for (double r : round_s_) s += r;
  return s;
}

GroupRunFigure SimGroupTester::run_once(const std::vector<int>& nodes, double& seconds) {
  GroupRunFigure fig;
  const int n = static_cast<int>(nodes.size());
  seconds += model_.group_overhead_s;
  for (const auto& order : pair::ring_orders_covering_all_pairs(n)) {
    double slowest = 0;
    for (int i = 0; i < n; ++i) {
      const int u = nodes[static_cast<size_t>(order[static_cast<size_t>(i)])];
      const int v = nodes[static_cast<size_t>(order[static_cast<size_t>((i + 1) % n)])];
      const double g = fabric_.link_gbit_s(u, v, rng_);
      if (i == 0 || g < slowest) slowest = g;
    }
    const double t = ring_seconds(model_, n, slowest);
    seconds += model_.ring_setup_s + std::min(t, model_.ring_timeout_s);
    if (t > model_.ring_timeout_s) {
      fig.failed = true;
      continue;
    }
    const double bw = ring_busbw_gbps(model_, n, slowest);
    if (!fig.min_busbw_gbps || bw < *fig.min_busbw_gbps) fig.min_busbw_gbps = bw;
  }
  return fig;
}

std::vector<bool> SimGroupTester::run_round(const std::vector<std::vector<int>>& groups) {
  std::vector<bool> out;
  double slowest = 0;
  for (const auto& g : groups) {
    double s = 0;
    // One node holds no link: negative without a run, as in search_runner.cc.
    if (g.size() < 2) {
      out.push_back(false);
      continue;
    }
    const int n = static_cast<int>(g.size());
    const double bar = group_test_threshold_gbit_s(n, group_test_bytes(n, model_.policy),
                                                   reference_, model_.fraction, model_.alpha_s);
    GroupRunFigure first = run_once(g, s);
    std::optional<GroupRunFigure> second;
    if (group_needs_second_run(first, bar)) second = run_once(g, s);
    out.push_back(group_answer(first, second, bar).positive);
    slowest = std::max(slowest, s);
  }
  round_s_.push_back(slowest);
  return out;
}

}  // namespace fabkit::slurm::sim
