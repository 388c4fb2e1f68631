// `fabcheck node`: gather every probe's facts, judge them, and assemble the report.
#pragma once

#include "common/report.h"
#include "probes/probe_context.h"

namespace fabkit {

// Never throws for an unhealthy node (that is findings); throws UsageError for bad user input
// (e.g. --topo naming a missing file) and InternalError for broken invariants.
Report run_node_probe(const ProbeContext& ctx);

}  // namespace fabkit
