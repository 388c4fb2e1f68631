// Where each all-reduce transport of a pair ran, and which row of the comparison is the RDMA one
// and why: without a GPU NCCL cannot run, so the CPU all-reduce over Gloo's ibverbs transport is
// the RDMA row beside the socket ones (issue #37). Pure: from PairFacts and the verdict's link.
#pragma once

#include <optional>
#include <string>

#include "fabric/pair/pair_facts.h"

namespace fabkit::pair {

// "eth0 <-> eth0" for a socket transport over the chosen link; "rxe0:1 (eth0) <-> rxe0:1 (eth0),
// RoCE" for an RDMA one on the ports the transport plan picks (the port's net device in brackets
// where the node report names it); "" when not known (no link, no runnable port pair).
std::string transport_via(const PairFacts& f, const std::string& transport,
                          std::optional<size_t> link);

struct RdmaRow {
  std::optional<std::string> transport;  // null: no RDMA all-reduce completed correctly
  std::string reason;
};

// NCCL over IB/RoCE where one ran ok and correct (what a GPU job uses; the faster when both did),
// else gloo-ibverbs, else none; the reason names the choice, why NCCL is not it (each NCCL RDMA
// row's own reason, or no NCCL in the agents' build), and whether the RDMA port sits on the
// socket rows' interfaces, so the rows compare transports over one link.
RdmaRow choose_rdma_row(const PairFacts& f, std::optional<size_t> link);

}  // namespace fabkit::pair
