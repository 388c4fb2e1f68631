// Runner entry points (docs/json/). Each rank calls the same function concurrently; rank 0
// listens on local_addr:port, rank 1 connects to peer_addr:port; the first bytes on each connection
// are the session token; every wait is bounded by timeout_ms. Failures come back as a TransportRun
// with status "failed" (or "unavailable") and extra.error naming the kind; they never throw.
#pragma once

#include <string>
#include <vector>

#include "fabric/allreduce/allreduce_types.h"

namespace fabkit::fabric {

TransportRun run_fabkit_socket_allreduce(const AllreduceSpec&);
TransportRun run_raw_exchange(const AllreduceSpec&);  // full-duplex, no reduction: the wire ceiling
TransportRun run_gloo_tcp_allreduce(const AllreduceSpec&);
TransportRun run_gloo_ibverbs_allreduce(const AllreduceSpec&, const std::string& hca, int port, int gid_index);

// A ring session (the cluster search's group test): spec.rank is this rank's index into
// spec.ring_addrs (every rank's address, world_size of them); each rank connects once to every
// other rank, then runs the sweep over each of `orders` (permutations of the ranks) in turn, on
// the connections to its two neighbours in that order. session: ok when every order ran ok, else
// failed naming the first order that failed (the ones after it do not run: its connections are
// left mid-stream); orders: one run per order that ran. Never throws.
struct RingSessionRun {
  TransportRun session;
  std::vector<TransportRun> orders;
};
RingSessionRun run_fabkit_socket_ring_session(const AllreduceSpec&,
                                              const std::vector<std::vector<int>>& orders);
// The session's TransportRun with "orders": [TransportRun...].
Json to_json(const RingSessionRun&);

}  // namespace fabkit::fabric
