// The RDMA RC point-to-point part of `fabcheck pair` (GitHub issue #3, item 2): which HCA port
// pairs to test (pure, from the agents' node reports), how to fold the agents' two results per
// pair into one row, and the findings (the agents' rdma.rc.* diagnoses, per host).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"
#include "fabric/pair/pair_facts.h"

namespace fabkit::pair {

// The same-rail ACTIVE port pairs of A and B (rdma_rails.h: by subnet, else by index).
std::vector<RcPortPair> rc_port_pairs(const Json& report_a, const Json& report_b);

// "rdma_rc" request arguments for one side (role "client" on A, "server" on B), with the sizes and
// counts of `plan` and the agent's budget for the whole test (rc_budget_ms).
Json rc_request_args(const RcPortPair& p, bool on_a, const std::string& mode, const std::string& local_addr,
                     const std::string& peer_addr, uint16_t port, int timeout_ms, const RcPlan& plan = {});
// How long the controller waits for one side's answer: the agent's own waits (channel, two
// exchanges, completions) plus the transfer at a pessimistic 100 Mbit/s (fabric/rdma
// rc_default_budget_ms), plus a margin.
int rc_answer_bound_ms(const std::string& mode, int timeout_ms, const RcPlan& plan = {});
// The agent's bound on its whole test: the controller's wait less a margin, so a QP whose
// completions trickle in fails by name (rdma.rc.too_slow) before the controller gives up on it.
int rc_budget_ms(const std::string& mode, int timeout_ms, const RcPlan& plan = {});

// The RC test's flags (fabcheck pair and cluster: --rc-iters, --rc-size, --rc-lat-iters) as a
// plan; rc_size as "65536", "64K" or "1M". Throws UsageError naming the flag, the value and the
// fix for anything outside the agents' own limits (1..1000000 iterations, 1 B..16 MiB messages).
RcPlan parse_rc_plan(int64_t rc_iters, const std::string& rc_size, int64_t rc_lat_iters);

// Folds the write_bw and send_lat documents (each [client on A, server on B]) into the row; the
// latency histogram must hold exactly plan.send_lat_iters samples.
RcPairResult combine_rc(const RcPortPair& p, const Json& write_bw, const Json& send_lat,
                        const RcPlan& plan = {});

// rdma.rc.* diagnoses from both agents (subject prefixed with the host; one per code and pair),
// pair.rdma_rc_failed for a failure without one, pair.rdma_rc_unavailable when nothing could run.
std::vector<Finding> judge_rdma_rc(const PairFacts& f);

Json to_json(const RdmaRcFacts& r);

}  // namespace fabkit::pair
