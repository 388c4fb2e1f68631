// The bad-link search inside `fabcheck cluster`: after the matrix (and its re-tests), when a
// flagged link was not cleared by its re-test or when asked (--search), the group-testing rounds
// of link_search.h run with real group tests: each group's agents run ring all-reduces
// (fabcheck pair's N-host controller) in every ring order that puts each pair of the group side by
// side, and the group is positive when one is slow or fails. Groups of a round run in parallel.
#pragma once

#include "slurm/cluster_runner.h"

namespace fabkit::slurm {

// Fills f.search (ran, or skipped with the reason). Needs f.pairs/f.retests/f.nodes.
void run_search(const ClusterOptions& o, ClusterFacts& f);

// A ring run's busbw in its fastest timed iteration (the figure a group test holds to its
// threshold); the mean's busbw when the rank did not time each call.
double fastest_iteration_busbw(const pair::SizeRow& s);

}  // namespace fabkit::slurm
