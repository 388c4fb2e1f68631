// The simulator's inputs from a real run: a `fabcheck cluster --json` report (docs/json/
// cluster.md) read into the few figures the simulator needs. Pure: the caller reads and parses
// the file (common/json_read.h) and hands the document here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "slurm/sim/group_model.h"

namespace fabkit::slurm::sim {

struct MeasuredRun {
  int hosts = 0;
  std::string plan;  // all | ring
  int max_parallel = 0;
  double slow_fraction = 0.5;
  // The healthy pair figures (matrix pairs in state "ok"): the simulator's noise.
  std::vector<double> healthy_gbit_s;
  // One wave of pair runs: schedule.pairs_ms / schedule.waves (the pairs of a wave run at once,
  // so this is what a wave costs, load included); and the median pair run, for comparison.
  double per_wave_s = 0;
  double median_pair_s = 0;
  double node_checks_s = 0;  // schedule.nodes_ms
  double retest_s = 0;       // schedule.retest_ms
  int schedule_waves = 0, retest_runs = 0;
  // The search, when the run had one.
  bool search_ran = false;
  double search_s = 0;
  int search_rounds = 0;
  std::string search_outcome, search_link;
  std::string search_trigger;       // "--search" when forced, else the link that triggered it
  std::optional<GroupModel> group;  // fitted from the search's clean groups (fit_group_model)
  int groups_fitted = 0;
  // The real verdict: every warn/fail finding as "code subject".
  std::vector<std::string> verdict;
  double wall_s = 0;  // node checks + pair rounds + re-tests + search
};

// Throws std::invalid_argument "SOURCE: FIELD: what is wrong" on a document that is not a
// cluster report or lacks a field the simulator needs.
MeasuredRun measured_from_report(const Json& doc, const std::string& source);

// The group-test model from a report's search rounds: alpha from the clean groups' busbw
// (busbw = (S/n)/(alpha + S/(n B)); measured.cc says how), then a least-squares line
// through the clean groups' wall time against their ring count (intercept: the group's own
// overhead; slope less the modelled ring time: a ring's set-up). Needs 1+ clean group with a
// figure; nullopt otherwise. Negative fits are clamped to 0.
std::optional<GroupModel> fit_group_model(const Json& search, int* groups_used = nullptr);

}  // namespace fabkit::slurm::sim
