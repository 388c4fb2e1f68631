// The socket runners' parts that the one-ring runner (socket_allreduce.cc) and the ring session
// (ring_session.cc) share: the plan digest both ends of a connection must agree on, and one sweep
// over connections already made.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/allreduce/allreduce_types.h"

namespace fabkit::fabric {

enum class Collective { kAllreduce, kRawExchange };

// FNV-1a of the collective, world size, iterations and sizes: the handshake's hello carries it,
// and a peer with another plan is refused (plan_mismatch).
uint64_t plan_digest(const std::string& collective, const AllreduceSpec& spec,
                     const std::vector<uint64_t>& sizes);

TransportRun failed_run(const std::string& transport, const std::string& kind,
                        const std::string& reason);

// The sweep of spec's sizes with spec.rank as this rank's place in the ring of spec.world_size:
// sends to the right neighbour on send_fd, receives from the left one on recv_fd (the same fd for
// 2 ranks). The fds are non-blocking and tuned already; socket_notes is what tuning them said.
// Never throws: a peer or usage error comes back as a failed TransportRun.
TransportRun sweep_on_links(const AllreduceSpec& spec, Collective what, int send_fd, int recv_fd,
                            const std::string& socket_notes);

}  // namespace fabkit::fabric
