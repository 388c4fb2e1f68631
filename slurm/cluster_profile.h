// The merged cluster.json of a `fabcheck cluster` run.
#pragma once

#include <string>

#include "profile/profile_model.h"
#include "slurm/cluster_runner.h"

namespace fabkit::slurm {

// Every node report that came back and every pair run's report, each node keyed by the name
// fabcheck cluster was given (network-namespace or container hosts share one kernel hostname).
// Throws UsageError when no node report came back.
profile::Profile cluster_profile(const ClusterFacts& f, const std::string& created_on);

}  // namespace fabkit::slurm
