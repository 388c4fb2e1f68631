// Runner entry points (docs/json/). Each rank calls the same function concurrently; rank 0
// listens on local_addr:port, rank 1 connects to peer_addr:port; the first bytes on each connection
// are the session token; every wait is bounded by timeout_ms. Failures come back as a TransportRun
// with status "failed" (or "unavailable") and extra.error naming the kind; they never throw.
#pragma once

#include <string>

#include "fabric/allreduce/allreduce_types.h"

namespace fabkit::fabric {

TransportRun run_fabkit_socket_allreduce(const AllreduceSpec&);
TransportRun run_raw_exchange(const AllreduceSpec&);  // full-duplex, no reduction: the wire ceiling
TransportRun run_gloo_tcp_allreduce(const AllreduceSpec&);
TransportRun run_gloo_ibverbs_allreduce(const AllreduceSpec&, const std::string& hca, int port, int gid_index);

}  // namespace fabkit::fabric
