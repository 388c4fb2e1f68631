// A cluster report's matrix pairs and nodes as the cluster baseline reads them: only the fields
// it compares, each checked for its type, so a bad document is named by field, not crashed on.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/json.h"

namespace fabkit::reports::baseline {

struct ClusterRunPair {
  std::string a, b, state, source, error;
  bool ok = false;
  std::optional<double> gbit_s, rtt_us, link_rate_gbit_s;  // gbit_s unset unless ok
};

struct ClusterRunNode {
  std::string host, check, error;
  int fail = 0, warn = 0;
  bool slow = false;
  std::optional<double> score_gbit_s;
};

struct ClusterRun {
  std::vector<ClusterRunPair> pairs;
  std::vector<ClusterRunNode> nodes;
};

// which: "old" or "new", the prefix of every error. Throws std::invalid_argument when doc is not
// a cluster run report (kind "cluster" with cluster.matrix and cluster.nodes) or a field it reads
// has the wrong type.
ClusterRun read_cluster_run(const Json& doc, const std::string& which);

}  // namespace fabkit::reports::baseline
