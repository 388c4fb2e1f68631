// The "rdma_rc" operation: one side of the RC point-to-point test (fabric/rdma, ib_write_bw /
// ib_send_lat style) on a local HCA port. The two agents swap their RC endpoint info over a TCP
// channel of their own: the server listens on the address the controller gave it, the client
// connects and presents the session token in a peer hello (as the TCP tests' data connections
// do), then each exchange is one frame each way. The controller only starts both sides; the
// endpoint info never passes through it.
#pragma once

#include <string>

#include "common/json.h"
#include "fabric/wire/socket_io.h"
#include "fabric/agent/agent_requests.h"
#include "verbs/verbs_api.h"

namespace fabkit::agent {

// The agents' own TCP channel between the two sides of a test: the server listens on
// local_addr:port and admits the first connection that proves the session token for `purpose`;
// the client connects to peer_addr:port from local_addr (retrying while nothing listens yet).
// Throws std::runtime_error naming what failed, within timeout_ms.
struct PeerChannelArgs {
  bool server = false;
  std::string local_addr, peer_addr;
  uint16_t port = 0;
  int timeout_ms = 10000;
  std::string purpose;  // "rdma_rc", "ofi_rdm"
};
wire::Fd open_peer_channel(const PeerChannelArgs& a, const std::string& token);

// Runs the test; returns {role, mode, device, ib_port, gid_index, channel, local, remote, ...the
// RcTestResult fields (docs/json/pair.md)}. Never throws for a failed test or channel: status
// "failed" with the reason.
Json run_rc_op(verbs::VerbsApi& api, const RcArgs& args, const std::string& token);

// The real libibverbs API when the build has it, else "unavailable" with the reason.
Json run_rc_op_live(const RcArgs& args, const std::string& token);

}  // namespace fabkit::agent
