// `fabcheck node --slurm-health`: the node report as a Slurm health check (HealthCheckProgram or a
// prolog). Pure decision: a node with at least one fail finding is drained with a one-line reason;
// warnings never drain (a health check that drains on "maybe" empties the cluster). The action
// (running scontrol, bounded) is health_action.h.
#pragma once

#include <string>
#include <vector>

#include "common/report.h"

namespace fabkit::slurm {

struct HealthDecision {
  bool drain = false;
  std::string node;    // Slurm's NodeName
  std::string reason;  // "fabcheck: rdma.port_polling mlx5_1:1 (+2 more)"; empty when healthy
  std::vector<std::string> scontrol_argv;  // empty when healthy
};

// The reason is one line of at most kMaxReasonChars printable characters (Slurm shows it in
// sinfo -R; quotes, newlines and control characters are replaced), naming the first fail finding
// by code and subject and counting the others.
inline constexpr size_t kMaxReasonChars = 120;
HealthDecision decide_health(const Report& node_report, const std::string& node_name);

// The line the health check prints: "fabcheck health: NODE ok (0 fail, 2 warn)" or
// "fabcheck health: NODE drain: REASON" (with " (dry run: not drained)" when it was not).
std::string health_line(const HealthDecision& d, const Report& r, bool dry_run);

}  // namespace fabkit::slurm
