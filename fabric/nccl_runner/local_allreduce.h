// An NCCL all-reduce over this node's GPUs: one fabcheck-nccl-runner child per GPU (rank i on
// CUDA device i), driven over the same child protocol as the pair runner (child_protocol.h), with
// this process in place of the agents: rank 0's READY carries the unique id, every rank gets
// GO <id>, each answers RESULT. For `fabcheck node --active` (intra-node busbw, NCCL's default
// algorithm and NCCL_ALGO=Ring). One deadline bounds the whole run; a rank that has not
// answered by then is killed with the others, so a hung GPU or NVLink never hangs the caller.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fabric/allreduce/allreduce_types.h"

namespace fabkit::fabric {

struct LocalAllreduceSpec {
  std::string runner_path;  // "" = find_nccl_runner's search
  int ranks = 0;            // GPUs: rank i on CUDA device i (of those CUDA_VISIBLE_DEVICES shows)
  uint64_t bytes = 1ull << 30;
  int warmup = 5;
  int iters = 20;
  // The environment the ranks get: this process's, with these set and removed (NCCL_ALGO=Ring
  // for the Ring run; NCCL_ALGO removed for NCCL's default choice).
  std::map<std::string, std::string> env_set;
  std::vector<std::string> env_unset;
  int timeout_ms = 60000;            // the whole run
  std::string label = "nccl-local";  // TransportRun.transport
};

// status "ok" (sizes[0]: the slowest rank's busbw/algbw and time, correct = every rank's check),
// "unavailable" (runner not built, no GPU: a rank's UNAVAILABLE), or "failed" with extra.error
// (nccl_error, cuda_error, timeout, child_died, child_protocol, wrong_result, invalid_spec) and a
// reason naming the rank. extra: ranks, nccl_version, elapsed_ms, child_exits, env, log_tail (on
// failure).
TransportRun run_local_allreduce(const LocalAllreduceSpec& spec);

}  // namespace fabkit::fabric
