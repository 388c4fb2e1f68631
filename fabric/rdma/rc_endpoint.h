// One side of the RC test: the verbs objects (RAII, in creation order, so teardown is reverse)
// and the steps that build and connect them. Internal to fabric/rdma.
#pragma once

#include <string>
#include <vector>

#include "fabric/rdma/rc_types.h"
#include "verbs/verbs_objects.h"

namespace fabkit::fabric::rdma {

// Control area after the data area: the client's "done" message (elapsed ns) goes here.
inline constexpr uint32_t kControlBytes = 64;

struct RcEndpoint {
  verbs::VerbsApi* api = nullptr;
  // The buffer first: members are destroyed in reverse, so it outlives its registration.
  std::vector<uint8_t> buffer;  // [data: size_bytes][control: kControlBytes]; latency: x2 data
  verbs::Context ctx;
  verbs::ProtectionDomain pd;
  verbs::MrOwner mr;
  verbs::CompletionQueue cq;
  verbs::QueuePair qp;
  verbs::MemoryRegion mr_keys;
  verbs::PortAttr port;
  RcEndpointInfo local;
  RcEndpointInfo remote;
  int port_num = 1;
  int traffic_class = 0;
  int service_level = 0;

  uint64_t addr(size_t offset) const { return reinterpret_cast<uint64_t>(buffer.data()) + offset; }
};

// Query the port and GID, open, allocate, register, create, move to INIT. On failure returns
// false with result.reason (and a finding for diagnosable causes) filled.
bool setup_endpoint(RcEndpoint& ep, const RcTestSpec& spec, size_t buffer_bytes, int queue_depth,
                    RcTestResult& result);
// INIT -> RTR -> RTS towards ep.remote with the given path MTU.
bool connect_endpoint(RcEndpoint& ep, int path_mtu, RcTestResult& result);

}  // namespace fabkit::fabric::rdma
