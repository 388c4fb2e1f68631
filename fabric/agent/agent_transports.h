// The all-reduce runners an agent can run on command, behind one small table so the runners
// (fabric/allreduce, fabric/nccl_runner) are wired in one file (agent_transports.cc) and a build
// without them still runs the reachability tests. The RDMA RC test is its own op (agent_rdma.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/json.h"
#include "fabric/agent/agent_requests.h"

namespace fabkit::agent {

std::vector<std::string> agent_transport_names();  // what this build can run, in preference order
// Runs one transport in this process, as this agent's rank (the runner child calls it:
// transport_child.h; the agent itself never does); returns the runner's TransportRun JSON
// ({transport, status ok|unavailable|failed, reason, sizes[], extra}). Throws AgentOpError
// "agent.unknown_transport" for a name not in agent_transport_names().
// on_size_done: after each size of the sweep (sizes done, total); empty for none.
Json run_agent_transport_here(const std::string& name, const TransportArgs& args, const std::string& token,
                              const std::function<void(size_t, size_t)>& on_size_done = {});

}  // namespace fabkit::agent
