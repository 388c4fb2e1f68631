// `fabcheck cluster`: the gather. `fabcheck node --json` on every node in parallel through the
// launcher, then the pair rounds of the schedule (the pairs of one round in parallel, each one the
// `fabcheck pair` controller with its own agents). Every wait is bounded: the node runs by
// node_timeout_ms, each pair run by the pair controller's own step bounds.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/report.h"
#include "fabric/launch/launcher.h"
#include "fabric/pair/pair_controller.h"
#include "slurm/matrix_judge.h"
#include "slurm/schedule.h"

namespace fabkit::slurm {

struct ClusterOptions {
  std::vector<std::string> hosts;
  std::string launcher_text = "ssh";
  launch::LauncherSpec launcher;
  std::string agent_path;  // fabcheck on the hosts
  PairPlan plan = PairPlan::kAll;
  int max_parallel = 32;  // pair runs (and node runs) at once
  int node_timeout_ms = 60000;
  bool skip_pairs = false;
  // After the rounds, the links the matrix judge flags (slow or failed between healthy nodes) are
  // measured once more, in rounds of disjoint pairs, so one noisy run is not called a bad cable.
  bool retest = true;
  MatrixOptions matrix;
  pair::PairOptions pair;  // host_a/host_b are set per run
};

struct NodeRun {
  std::string host;
  bool ok = false;    // a node report came back
  Json report;        // the `fabcheck node --json` document (null when !ok)
  std::string error;  // !ok: the launcher's exit and stderr, or the parse error
  std::string exit;   // "exit status 1", "killed by signal 9"
  double elapsed_ms = 0;
};

struct PairRun {
  int a = 0, b = 0;
  int round = 0;
  pair::PairFacts facts;
  Report report;  // pair::build_pair_report(facts)
  double elapsed_ms = 0;
};

struct ClusterFacts {
  std::vector<std::string> hosts;
  std::string launcher;
  PairPlan plan = PairPlan::kAll;
  int max_parallel = 0;
  std::vector<Round> rounds;
  std::vector<NodeRun> nodes;    // in host order
  std::vector<PairRun> pairs;    // in schedule order
  std::vector<PairRun> retests;  // the flagged links measured again (round = -1 - retest round)
  std::vector<double> round_ms;
  double nodes_ms = 0, pairs_ms = 0, retest_ms = 0;
};

ClusterFacts run_cluster(const ClusterOptions& o);

// Runs fn(i) for i in [0, n) on up to `parallel` threads at once; returns when all are done.
void run_parallel(size_t n, int parallel, const std::function<void(size_t)>& fn);

}  // namespace fabkit::slurm
