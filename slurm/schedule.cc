#include "slurm/schedule.h"

#include <algorithm>
#include <set>

#include "common/errors.h"

namespace fabkit::slurm {

const char* to_string(PairPlan p) {
  return p == PairPlan::kRing ? "ring" : p == PairPlan::kAuto ? "auto" : "all";
}

PairPlan pair_plan_from_string(const std::string& text) {
  if (text == "all") return PairPlan::kAll;
  if (text == "ring") return PairPlan::kRing;
  if (text == "auto") return PairPlan::kAuto;
  throw UsageError("--pairs '" + text +
                   "' is not a pair plan: use --pairs auto (all pairs when they fit --budget, "
                   "else a ring and shifts that do), --pairs all (every pair, N-1 rounds) or "
                   "--pairs ring (neighbours only, 2-3 rounds)");
}

std::vector<Round> round_robin(int nodes) {
  std::vector<Round> rounds;
  if (nodes < 2) return rounds;
  // Circle method on an even count; slot value `nodes` is the phantom of an odd tournament.
  const int n = nodes % 2 == 0 ? nodes : nodes + 1;
  std::vector<int> slot(n);
  for (int i = 0; i < n; ++i) slot[i] = i;
  for (int r = 0; r < n - 1; ++r) {
    Round round;
    for (int i = 0; i < n / 2; ++i) {
      int x = slot[i], y = slot[n - 1 - i];
      if (x == nodes || y == nodes) {
        round.idle.push_back(x == nodes ? y : x);
        continue;
      }
      round.pairs.push_back({std::min(x, y), std::max(x, y)});
    }
    rounds.push_back(std::move(round));
    // Keep slot 0, rotate the rest one place clockwise.
    std::rotate(slot.begin() + 1, slot.end() - 1, slot.end());
  }
  return rounds;
}

std::vector<Round> ring_rounds(int nodes) {
  std::vector<Round> rounds;
  if (nodes < 2) return rounds;
  if (nodes == 2) return {Round{{{0, 1}}, {}}};
  Round even, odd, closing;
  for (int i = 0; i + 1 < nodes; ++i) (i % 2 == 0 ? even : odd).pairs.push_back({i, i + 1});
  // The closing link (N-1, 0): with N even, N-1 is odd, so it joins the odd round (node 0 and node
  // N-1 are both free there); with N odd, node N-1 is busy in the odd round and 0 in the even one.
  NodePair close{0, nodes - 1};
  if (nodes % 2 == 0)
    odd.pairs.push_back(close);
  else
    closing.pairs.push_back(close);
  for (Round* r : {&even, &odd, &closing}) {
    if (r->pairs.empty()) continue;
    std::vector<bool> busy(nodes, false);
    for (const auto& p : r->pairs) busy[p.a] = busy[p.b] = true;
    for (int i = 0; i < nodes; ++i)
      if (!busy[i]) r->idle.push_back(i);
    rounds.push_back(*r);
  }
  return rounds;
}

std::vector<Round> make_schedule(PairPlan plan, int nodes) {
  FABKIT_ENFORCE(plan != PairPlan::kAuto, "--pairs auto is planned by plan_cluster");
  return plan == PairPlan::kRing ? ring_rounds(nodes) : round_robin(nodes);
}

std::vector<Round> disjoint_rounds(const std::vector<NodePair>& pairs) {
  std::vector<Round> rounds;
  std::vector<std::set<int>> busy;
  for (const auto& p : pairs) {
    size_t r = 0;
    while (r < rounds.size() && (busy[r].count(p.a) || busy[r].count(p.b))) ++r;
    if (r == rounds.size()) {
      rounds.emplace_back();
      busy.emplace_back();
    }
    rounds[r].pairs.push_back(p);
    busy[r].insert({p.a, p.b});
  }
  return rounds;
}

ScheduleCost schedule_cost(const std::vector<Round>& rounds, int nodes, double per_pair_s,
                           int max_parallel) {
  ScheduleCost c;
  c.rounds = static_cast<int>(rounds.size());
  const int cap = std::max(1, max_parallel);
  for (const auto& r : rounds) {
    int n = static_cast<int>(r.pairs.size());
    c.pair_runs += n;
    c.waves += (n + cap - 1) / cap;
  }
  c.sequential_runs = nodes * (nodes - 1) / 2;
  c.seconds = c.waves * per_pair_s;
  return c;
}

std::string check_schedule(const std::vector<Round>& rounds, int nodes) {
  std::set<std::pair<int, int>> seen;
  for (size_t r = 0; r < rounds.size(); ++r) {
    std::vector<bool> busy(nodes, false);
    for (const auto& p : rounds[r].pairs) {
      std::string where = "round " + std::to_string(r) + " pair (" + std::to_string(p.a) + "," +
                          std::to_string(p.b) + ")";
      if (p.a < 0 || p.b >= nodes || p.a >= p.b)
        return where + ": not 0 <= a < b < " + std::to_string(nodes);
      if (busy[p.a] || busy[p.b]) return where + ": a node is in two pairs of the round";
      busy[p.a] = busy[p.b] = true;
      if (!seen.insert({p.a, p.b}).second) return where + ": the pair was already measured";
    }
  }
  return "";
}

}  // namespace fabkit::slurm
