// NCCL all-reduce for one transport configuration, in a fresh fabcheck-nccl-runner child process
// (fabcheck itself never loads libnccl or the CUDA driver). The two agents exchange their child's
// readiness and rank 0's ncclUniqueId over a token-authenticated connection (rank 0 listens on
// local_addr:port); the child's NCCL_DEBUG=INFO log is parsed to confirm the transport NCCL really
// used: a silent fallback (asked IB, got Socket) is status "ok" with extra.fell_back = true and
// the evidence lines.
#pragma once

#include <string>
#include <vector>

#include "common/json.h"
#include "fabric/allreduce/allreduce_types.h"
#include "fabric/nccl_runner/nccl_env.h"

namespace fabkit::fabric {

TransportRun run_nccl_allreduce(const AllreduceSpec& spec, const NcclTransportChoice& choice);

// Where the child binary is: choice.runner_path, else $FABKIT_NCCL_RUNNER, beside /proc/self/exe,
// the installed libexec/fabkit (common/helper_program.h). "" when none exists (fabcheck was built
// without NCCL) or none passes the trust rule (each refused one in *refused).
std::string find_nccl_runner(const NcclTransportChoice& choice,
                             std::vector<std::string>* refused = nullptr);

// The "not found" reason for a run without a runner, with what was refused and why.
std::string nccl_runner_not_found(const std::vector<std::string>& refused);

// Pure: the transport confirmation from a parsed log. Sets extra.nccl_network, extra.fell_back
// (true/false, null when the log names no network), extra.fallback_evidence and extra.net:
// {name (the network NCCL used), plugin (the net plugin's file, else its name; null: none or not
// said), plugin_version}.
void judge_transport_used(const std::string& expected_network, const Json& nccl_log_summary, Json* extra);

}  // namespace fabkit::fabric
