// The plan: all pairs when they fit the budget; otherwise a ring plus "shifts" chosen greedily.
//
// Why rings and shifts: over an order of the hosts, shift s is the pairs (i, i+s mod N). Every
// node is in exactly two of its pairs (one for s = N/2), the pairs form cycles that pack into 2
// rounds of disjoint pairs (3 when a cycle is odd), so a shift costs what the ring costs and
// keeps every node busy in every round; distinct s in [1, N/2] never repeat a pair, and all of
// them together are every pair. The ring (s = 1) over the hosts sorted by leaf pairs intra-leaf
// neighbours (cheap, no spine) and gives every node two peers, the least that tells a slow node
// (low against both) from a bad link (low against one); every rail is measured per pair run, so
// that is twice per rail too. Larger shifts cross leaves, and under destination-based
// up-routing (fabric_topology.h spine_for) which spines they load depends on s: the greedy
// picks, while the budget lasts, the shift that adds the most of what is still missing, in this
// order: every leaf<->spine path loaded twice each way (a bad spine port shows in two pair runs,
// not one), every pair of leaves met once, then more peers per node (spread-out distances).
// docs/cluster.md, "The schedule" and "Cost model", has the figures.
#include "slurm/planner.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>

#include "common/errors.h"

namespace fabkit::slurm {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The rounds of shift s have these pair counts (see shift_rounds).
std::vector<int64_t> shift_round_sizes(int n, int s) {
  const int g = std::gcd(n, s), len = n / g;
  if (len == 2) return {n / 2};
  if (len % 2 == 0) return {n / 2, n / 2};
  return {static_cast<int64_t>(g) * (len - 1) / 2, static_cast<int64_t>(g) * (len - 1) / 2, g};
}

int64_t waves_of(const std::vector<int64_t>& sizes, int64_t cap) {
  int64_t w = 0;
  for (int64_t k : sizes) w += ceil_div(k, cap);
  return w;
}

std::string secs(double s) {
  char buf[64];
  if (s >= 7200)
    std::snprintf(buf, sizeof buf, "%.0f s (%.1f h)", s, s / 3600);
  else
    std::snprintf(buf, sizeof buf, "%.0f s", s);
  return buf;
}

// What is still missing, and how much a shift would add to it.
class Greedy {
 public:
  Greedy(const PlanInput& in, const std::vector<int>& order)
      : t_(in.topology), order_(order), n_(in.nodes), leaves_(t_.leaves()) {
    if (t_.spines > 0) loads_.assign(static_cast<size_t>(2 * leaves_ * t_.spines), 0);
    added_.assign(loads_.size(), 0);
    if (!t_.leaf_of.empty()) {
      met_.assign(static_cast<size_t>(leaves_) * static_cast<size_t>(leaves_), 0);
      marked_.assign(met_.size(), 0);
    }
  }

  // Calls fn(a, b) for every pair of shift s (node indexes).
  template <typename Fn>
  void for_pairs(int s, Fn fn) const {
    const int count = 2 * s == n_ ? n_ / 2 : n_;
    for (int i = 0; i < count; ++i)
      fn(order_[static_cast<size_t>(i)], order_[static_cast<size_t>((i + s) % n_)]);
  }

  void add(int s) {
    for_pairs(s, [&](int a, int b) {
      if (!loads_.empty()) {
        bump(a, b, loads_);
        bump(b, a, loads_);
      }
      if (!met_.empty() && t_.leaf(a) != t_.leaf(b)) ++met_[leaf_pair(a, b)];
    });
  }

  bool paths_missing() const {
    return std::any_of(loads_.begin(), loads_.end(), [](int k) { return k < 2; });
  }
  bool leaf_pairs_missing() const {
    for (int x = 0; x < leaves_; ++x)
      for (int y = x + 1; y < leaves_; ++y)
        if (met_[static_cast<size_t>(x * leaves_ + y)] == 0) return true;
    return false;
  }

  // Loads short of 2 that shift s would fill.
  int64_t path_gain(int s) {
    std::vector<size_t> touched;
    int64_t gain = 0;
    auto count = [&](int src, int dst) {
      for (size_t i : path_indexes(src, dst)) {
        if (i == kNone) continue;
        if (added_[i] == 0) touched.push_back(i);
        if (loads_[i] + added_[i]++ < 2) ++gain;
      }
    };
    for_pairs(s, [&](int a, int b) {
      count(a, b);
      count(b, a);
    });
    for (size_t i : touched) added_[i] = 0;
    return gain;
  }

  // Pairs of leaves shift s would meet for the first time (kFirst), or, once every pair of
  // leaves has met, the spread it adds: each cross-leaf pair weighs 1 / (1 + times met).
  double leaf_gain(int s, bool first_only) {
    if (met_.empty()) return 0;
    std::vector<size_t> touched;
    double gain = 0;
    for_pairs(s, [&](int a, int b) {
      if (t_.leaf(a) == t_.leaf(b)) return;
      size_t i = leaf_pair(a, b);
      if (first_only) {
        if (met_[i] == 0 && !marked_[i]) {
          marked_[i] = 1;
          touched.push_back(i);
          gain += 1;
        }
      } else {
        gain += 1.0 / (1.0 + met_[i]);
      }
    });
    for (size_t i : touched) marked_[i] = 0;
    return gain;
  }

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);
  std::array<size_t, 2> path_indexes(int src, int dst) const {
    const int s = spine_for(t_, src, dst);
    if (s < 0) return {kNone, kNone};
    const size_t down = static_cast<size_t>(leaves_) * static_cast<size_t>(t_.spines);
    return {static_cast<size_t>(t_.leaf(src) * t_.spines + s),
            down + static_cast<size_t>(t_.leaf(dst) * t_.spines + s)};
  }
  void bump(int src, int dst, std::vector<int>& v) const {
    for (size_t i : path_indexes(src, dst))
      if (i != kNone) ++v[i];
  }
  size_t leaf_pair(int a, int b) const {
    const int x = std::min(t_.leaf(a), t_.leaf(b)), y = std::max(t_.leaf(a), t_.leaf(b));
    return static_cast<size_t>(x) * static_cast<size_t>(leaves_) + static_cast<size_t>(y);
  }

  const FabricTopology& t_;
  const std::vector<int>& order_;
  int n_, leaves_;
  std::vector<int> loads_, added_;
  std::vector<int> met_;
  std::vector<char> marked_;
};

// The shifts worth evaluating: every one up to 512 of them, else 512 spread over [2, N/2], which
// keeps a greedy step O(512 N) at N = 4096 and still offers every leaf distance.
std::vector<int> candidate_shifts(int n) {
  std::vector<int> c;
  const int hi = n / 2;
  if (hi < 2) return c;
  const int kMax = 512;
  if (hi - 1 <= kMax) {
    for (int s = 2; s <= hi; ++s) c.push_back(s);
    return c;
  }
  for (int k = 0; k < kMax; ++k) {
    int s = 2 + static_cast<int>(static_cast<int64_t>(k) * (hi - 2) / (kMax - 1));
    if (c.empty() || c.back() != s) c.push_back(s);
  }
  return c;
}

}  // namespace

const char* to_string(PlanStrategy s) {
  switch (s) {
    case PlanStrategy::kAllPairs:
      return "all";
    case PlanStrategy::kRing:
      return "ring";
    case PlanStrategy::kShifts:
      return "shifts";
  }
  return "all";
}

ScheduleCost all_pairs_cost(int nodes, double per_pair_s, int max_parallel) {
  ScheduleCost c;
  if (nodes < 2) return c;
  const int64_t n = nodes;
  const int64_t rounds = n % 2 == 0 ? n - 1 : n;
  const int64_t per_round = n / 2;
  const int64_t cap = max_parallel > 0 ? max_parallel : per_round;
  c.rounds = static_cast<int>(rounds);
  c.waves = static_cast<int>(rounds * ceil_div(per_round, cap));
  c.pair_runs = static_cast<int>(n * (n - 1) / 2);
  c.sequential_runs = c.pair_runs;
  c.seconds = c.waves * per_pair_s;
  return c;
}

std::vector<Round> shift_rounds(const std::vector<int>& order, int s) {
  const int n = static_cast<int>(order.size());
  FABKIT_ENFORCE(n >= 2 && s >= 1 && 2 * s <= n, "shift out of [1, N/2]");
  const int g = std::gcd(n, s), len = n / g;
  std::vector<Round> rounds(len == 2 ? 1 : len % 2 == 0 ? 2 : 3);
  for (int c = 0; c < g; ++c) {
    // The cycle c, c+s, c+2s, ... has len nodes; alternate its edges between two rounds, and an
    // odd cycle's closing edge (it shares a node with both neighbours' rounds) goes to a third.
    const int edges = len == 2 ? 1 : len;
    for (int j = 0; j < edges; ++j) {
      const int x = order[static_cast<size_t>((c + static_cast<int64_t>(j) * s) % n)];
      const int y = order[static_cast<size_t>((c + static_cast<int64_t>(j + 1) * s) % n)];
      const int r = len % 2 == 1 && j == len - 1 ? 2 : j % 2;
      rounds[static_cast<size_t>(r)].pairs.push_back({std::min(x, y), std::max(x, y)});
    }
  }
  for (auto& r : rounds) {
    std::vector<bool> busy(static_cast<size_t>(n), false);
    for (const auto& p : r.pairs)
      busy[static_cast<size_t>(p.a)] = busy[static_cast<size_t>(p.b)] = true;
    for (int i = 0; i < n; ++i)
      if (!busy[static_cast<size_t>(i)]) r.idle.push_back(i);
  }
  return rounds;
}

ClusterPlan plan_cluster(const PlanInput& in) {
  FABKIT_ENFORCE(in.nodes >= 0, "negative node count");
  PlanInput input = in;
  FabricTopology& topo = input.topology;
  if (topo.nodes == 0) topo.nodes = in.nodes;
  FABKIT_ENFORCE(topo.nodes == in.nodes, "the topology is for another node count");
  FABKIT_ENFORCE(topo.leaf_of.empty() || static_cast<int>(topo.leaf_of.size()) == in.nodes,
                 "leaf_of has no entry for some node");
  const int n = in.nodes;
  ClusterPlan p;
  p.asked = in.pairs;
  p.budget_s = in.budget_s;
  p.per_pair_s = in.per_pair_s;
  p.search_reserve_s = in.search_reserve_s;
  p.max_parallel = in.max_parallel;
  // Waves split a round at max_parallel; 0 runs a whole round at once.
  const int64_t cap = in.max_parallel > 0 ? in.max_parallel : std::max(1, n / 2);
  const int cost_cap = static_cast<int>(std::min<int64_t>(cap, 1 << 30));

  p.order.resize(static_cast<size_t>(n));
  std::iota(p.order.begin(), p.order.end(), 0);
  std::stable_sort(p.order.begin(), p.order.end(),
                   [&](int a, int b) { return topo.leaf(a) < topo.leaf(b); });

  const ScheduleCost all = all_pairs_cost(n, in.per_pair_s, in.max_parallel);
  p.all_pairs_s = all.seconds;
  const double room = in.budget_s - in.search_reserve_s;  // for the pair rounds
  const std::string budget_text = "the " + secs(in.budget_s) + " budget" +
                                  (in.search_reserve_s > 0 ? " (less " + secs(in.search_reserve_s) +
                                                                 " kept for the bad-link search)"
                                                           : "");

  if (in.pairs == PairPlan::kAll || (in.pairs == PairPlan::kAuto && all.seconds <= room) || n < 2) {
    p.strategy = PlanStrategy::kAllPairs;
    p.rounds = round_robin(n);
    p.why = in.pairs == PairPlan::kAll ? "--pairs all: every pair, as asked (" + secs(all.seconds) +
                                             "; the budget is not applied)"
            : n < 2 ? "fewer than 2 nodes: nothing to pair"
                    : "--pairs all fits: every pair in " + std::to_string(all.rounds) +
                          " rounds, " + secs(all.seconds) + " within " + budget_text;
  } else {
    Greedy greedy(input, p.order);
    p.shifts.push_back(1);
    greedy.add(1);
    int64_t waves = waves_of(shift_round_sizes(n, 1), cap);
    const bool ring_fits = waves * in.per_pair_s <= room;
    if (in.pairs == PairPlan::kAuto && ring_fits) {
      std::vector<int> cands = candidate_shifts(n);
      std::vector<char> used(static_cast<size_t>(n / 2 + 1), 0);
      // Phases: 0 leaf<->spine paths twice, 1 every pair of leaves once, 2 spread.
      int phase = 0;
      while (phase < 3) {
        if (phase == 0 && !greedy.paths_missing()) {
          ++phase;
          continue;
        }
        if (phase == 1 && (topo.leaf_of.empty() || !greedy.leaf_pairs_missing())) {
          ++phase;
          continue;
        }
        int best = -1;
        double best_gain = 0;
        int64_t best_waves = 0;
        int best_spread = -1;
        for (int s : cands) {
          if (used[static_cast<size_t>(s)]) continue;
          const int64_t w = waves_of(shift_round_sizes(n, s), cap);
          if ((waves + w) * in.per_pair_s > room) continue;
          const double gain = phase == 0   ? static_cast<double>(greedy.path_gain(s))
                              : phase == 1 ? greedy.leaf_gain(s, true)
                                           : greedy.leaf_gain(s, false);
          if (phase < 2 && gain <= 0) continue;
          int spread = n;
          for (int c : p.shifts) spread = std::min(spread, std::abs(s - c));
          const bool better = best < 0 || gain > best_gain + 1e-9 ||
                              (gain > best_gain - 1e-9 &&
                               (w < best_waves || (w == best_waves && spread > best_spread)));
          if (better) {
            best = s;
            best_gain = gain;
            best_waves = w;
            best_spread = spread;
          }
        }
        if (best < 0) {
          ++phase;
          continue;
        }
        used[static_cast<size_t>(best)] = 1;
        p.shifts.push_back(best);
        greedy.add(best);
        waves += best_waves;
      }
    }
    for (int s : p.shifts)
      for (auto& r : shift_rounds(p.order, s)) p.rounds.push_back(std::move(r));
    p.strategy = p.shifts.size() == 1 ? PlanStrategy::kRing : PlanStrategy::kShifts;
    const std::string ring = std::string("the ring along the hosts ") +
                             (topo.leaf_of.empty() ? "in the order given" : "sorted by leaf");
    if (in.pairs == PairPlan::kRing)
      p.why = "--pairs ring: " + ring + " (every node in 2 pairs), as asked";
    else if (!ring_fits)
      p.why = "--pairs all would take " + secs(all.seconds) + " and even " + ring +
              " (every node in 2 pairs, the least that tells a slow node from a bad link) takes " +
              secs(waves * in.per_pair_s) + ", over " + budget_text +
              ": the ring runs anyway; raise --budget or --max-parallel";
    else {
      // Say only the aims that applied: without spines or leaves the greedy spread the shifts.
      std::string aims = topo.spines > 0 ? "load every leaf<->spine path twice each way, " : "";
      if (!topo.leaf_of.empty()) aims += "meet every pair of leaves, ";
      aims += aims.empty() ? "give each node more peers" : "then give each node more peers";
      p.why = "--pairs all would take " + secs(all.seconds) + ", over " + budget_text + ": " +
              ring + " plus " + std::to_string(p.shifts.size() - 1) + " shift" +
              (p.shifts.size() == 2 ? "" : "s") + " chosen to " + aims + ", while the budget lasts";
    }
  }
  p.cost = schedule_cost(p.rounds, n, in.per_pair_s, cost_cap);
  p.estimated_s = p.cost.seconds + in.search_reserve_s;
  p.fits_budget = p.estimated_s <= in.budget_s;
  p.coverage = plan_coverage(p.rounds, topo, in.topology_notes);
  return p;
}

double parse_budget_s(const std::string& text) {
  const std::string fix =
      "give seconds or a number with s, m or h: --budget 600, --budget 600s, --budget 10m, "
      "--budget 1h";
  size_t end = 0;
  double v = 0;
  bool ok = !text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.');
  if (ok) {
    try {
      v = std::stod(text, &end);
    } catch (const std::exception&) {
      ok = false;
    }
  }
  if (ok) {
    const std::string unit = text.substr(end);
    if (unit.empty() || unit == "s")
      v *= 1;
    else if (unit == "m" || unit == "min")
      v *= 60;
    else if (unit == "h")
      v *= 3600;
    else
      ok = false;
  }
  if (!ok || !std::isfinite(v))
    throw UsageError("--budget '" + text + "' is not a duration: " + fix);
  if (v <= 0) throw UsageError("--budget '" + text + "' is no time to measure in: " + fix);
  return v;
}

}  // namespace fabkit::slurm
