// Per-node GPU health for `fabcheck cluster`'s nodes table: how many GPUs a node has, which of them
// have fail or warn findings (gpu.*), and the codes, so the cluster report says which node's GPUs
// to drain without opening every node report. Pure: from the node report and its findings.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"

namespace fabkit::slurm {

struct NodeGpuHealth {
  std::optional<int> gpus;         // gpus.count; nullopt when the report has no gpus section
  std::string driver_version;      // "" when unknown
  int gpus_failing = 0;            // GPUs with at least one gpu.* fail finding
  int gpus_warning = 0;            // GPUs with gpu.* warn findings and no fail
  std::vector<std::string> codes;  // distinct gpu.* warn/fail codes, in report order
};

NodeGpuHealth node_gpu_health(const Json& node_report, const std::vector<Finding>& findings);
Json to_json(const NodeGpuHealth& h);

}  // namespace fabkit::slurm
