// `fabcheck node`: gather every probe's facts, judge them, and assemble the report.
#pragma once

#include "common/report.h"
#include "probes/probe_context.h"

namespace fabkit {

// Never throws for an unhealthy node (that is findings); throws UsageError for bad user input
// (e.g. --topo naming a missing file) and InternalError for broken invariants.
Report run_node_probe(const ProbeContext& ctx);

// The node probe as everything that looks at this node runs it (`fabcheck node` and every other
// subcommand, the pair agents' facts, fabtrain's profile check), so they cannot disagree: a live
// run asks libibverbs (when built with it) and falls back to sysfs; under --sysroot the fixture's
// sysfs is the truth, so verbs (which would describe this machine) stays unset.
Report probe_this_node(ProbeContext ctx);

}  // namespace fabkit
