// The "ofi_rdm" operation: one side of the RDM point-to-point test over libfabric
// (fabric/ofi_rdm/ofi_rdm_test.h). It runs in a runner child of the agent (transport_child.h):
// libfabric and its providers are libraries the agent does not control, and one that aborts ends
// this test, not the agent. The endpoint addresses are swapped on the agents' own channel
// (agent_rdma.h, open_peer_channel), one frame each way.
#pragma once

#include <string>

#include "common/json.h"
#include "fabric/agent/agent_requests.h"

namespace fabkit::agent {

inline constexpr char kOfiRunnerName[] = "ofi_rdm";

// {role, provider, channel ("ok" | "failed"), ...OfiRdmResult (ofi_rdm_test.h to_json)}. Never
// throws for a failed test or channel: status "failed" with the reason.
Json run_ofi_op(const OfiArgs& args, const std::string& token);

}  // namespace fabkit::agent
