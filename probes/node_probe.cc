// The order matters: later judges see earlier facts (memlock matters only where RDMA devices
// exist; NCCL settings are checked against the HCAs and interfaces found).
#include "probes/node_probe.h"

#include <unistd.h>

#include "probes/limits/limits_facts.h"

namespace fabkit {
namespace {

std::string this_hostname(const ProbeContext& ctx) {
  if (!ctx.roots.live) return "sysroot:" + ctx.roots.root.string();
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

void append(std::vector<Finding>& to, std::vector<Finding> from) {
  for (auto& f : from) to.push_back(std::move(f));
}

}  // namespace

Report run_node_probe(const ProbeContext& ctx) {
  Report r;
  r.kind = "node";
  r.hostname = this_hostname(ctx);
  r.generated_at = utc_now_rfc3339();

  // 1. Gather (I/O), in dependency order.
  // [rdma gather]
  bool has_rdma = false;
  auto limits = probes::gather_limits(ctx);
  // [net gather] [nccl_env gather] [topo_file gather] [locality gather] [gpu gather]
  // [gpudirect gather]

  // 2. Judge (pure).
  // [rdma judge]
  append(r.findings, probes::judge_limits(limits, has_rdma));
  // [net judge] [nccl_env judge] [topo_file judge] [locality judge] [gpu judge] [gpudirect judge]

  // 3. Sections, one per probe, in the order above.
  // [rdma section]
  r.sections.push_back({"limits", probes::to_json(limits)});
  // [net section] [nccl_env section] [topo_file section] [locality section] [gpu section]
  // [gpudirect section]
  return r;
}

}  // namespace fabkit
