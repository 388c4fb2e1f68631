// The RDMA RC point-to-point part of `fabcheck pair` (GitHub issue #3, item 2): which HCA port
// pairs to test (pure, from the agents' node reports), how to fold the agents' two results per
// pair into one row, and the findings (the agents' rdma.rc.* diagnoses, per host).
#pragma once

#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"
#include "fabric/pair/pair_facts.h"

namespace fabkit::pair {

// perftest's defaults: ib_write_bw 64 KiB x 5000, ib_send_lat 2 B x 1000.
inline constexpr uint32_t kRcWriteBwBytes = 65536;
inline constexpr int kRcWriteBwIters = 5000;
inline constexpr uint32_t kRcSendLatBytes = 2;
inline constexpr int kRcSendLatIters = 1000;

// The same-rail ACTIVE port pairs of A and B (rdma_rails.h: by subnet, else by index).
std::vector<RcPortPair> rc_port_pairs(const Json& report_a, const Json& report_b);

// "rdma_rc" request arguments for one side (role "client" on A, "server" on B).
Json rc_request_args(const RcPortPair& p, bool on_a, const std::string& mode, const std::string& local_addr,
                     const std::string& peer_addr, uint16_t port, int timeout_ms);
// How long the controller waits for one side's answer: the agent's own waits (channel, two
// exchanges, completions) plus the transfer at a pessimistic 1 Gbit/s, plus a margin.
int rc_answer_bound_ms(const std::string& mode, int timeout_ms);

// Folds the write_bw and send_lat documents (each [client on A, server on B]) into the row.
RcPairResult combine_rc(const RcPortPair& p, const Json& write_bw, const Json& send_lat);

// rdma.rc.* diagnoses from both agents (subject prefixed with the host; one per code and pair),
// pair.rdma_rc_failed for a failure without one, pair.rdma_rc_unavailable when nothing could run.
std::vector<Finding> judge_rdma_rc(const PairFacts& f);

Json to_json(const RdmaRcFacts& r);

}  // namespace fabkit::pair
