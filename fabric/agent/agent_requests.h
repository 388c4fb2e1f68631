// Parsing and range-checking of every request an agent accepts, apart from running anything:
// the agent calls these before acting, and the fuzz target calls them on arbitrary bytes (this
// library links no sockets, probes or runners).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/json.h"
#include "fabric/tcp/tcp_test.h"
#include "fabric/wire/messages.h"

namespace fabkit::agent {

inline constexpr int64_t kMaxTimeoutMs = 10 * 60 * 1000;

// The RDMA port a transport runs on, from the request's "extra" object: hca a sysfs-style device
// name, ib_port 1..255 (verbs port numbers are u8, counted from 1), gid_index -1..255 (a u8 GID
// table index; -1 = InfiniBand/LID or the runner's choice).
struct RdmaPortArgs {
  std::string hca;  // "" when the request names none
  int ib_port = 1;
  int gid_index = -1;
};

struct TransportArgs {
  int rank = 0;                 // 0 listens on local_addr:port, 1 connects to peer_addr:port
  // world_size > 2 (fabcheck pair A B C ...): a ring; rank i listens on ring_addrs[i] and
  // connects to ring_addrs[i+1]. peer_addr is then the right neighbour's address.
  int world_size = 2;
  std::vector<std::string> ring_addrs;
  // A ring session (fabkit-socket only): every order a permutation of the ranks, run one after
  // the other in one runner over connections made once to every other rank (ring_addrs then
  // required at any world_size). Empty: the one ring 0..world_size-1.
  std::vector<std::vector<int>> ring_orders;
  std::string local_addr, peer_addr, ifname;
  uint16_t port = 0;
  std::vector<uint64_t> sizes_bytes;
  int iters = 20, warmup_iters = 5, timeout_ms = 30000;
  RdmaPortArgs rdma;  // from "extra" (hca, ib_port, gid_index; link_layer, rate_gbps informational)
  bool progress = false;  // "progress": send a wire::ProgressNote after each size of the sweep
  // The whole sweep, after which the agent kills the runner's child (transport_child.h); the
  // controller sends a little less than it waits itself, so the answer still reaches it.
  // Absent: every timed wait of the sweep at timeout_ms, plus connection set-up, capped.
  int sweep_timeout_ms = 0;
};
inline constexpr int64_t kMaxSweepTimeoutMs = 60 * 60 * 1000;

// The "rdma_rc" request: one side of the RC point-to-point test (fabric/rdma) on a local HCA port.
// The server listens on local_addr:port for the client's endpoint channel (token-authenticated);
// the client connects to peer_addr:port from local_addr.
struct RcArgs {
  std::string role;    // "server" | "client"
  std::string mode;    // "write_bw" | "send_lat"
  std::string device;  // "mlx5_0"
  int ib_port = 1;
  int gid_index = -1;  // -1: InfiniBand (no GRH) or the RoCE v2 GID the test picks
  std::string local_addr, peer_addr;  // peer_addr: client only
  uint16_t port = 0;
  uint32_t size_bytes = 65536;
  int iters = 5000, warmup_iters = 10, tx_depth = 128;
  int timeout_ms = 10000;  // each wait on the peer (channel connect, each exchange, completions)
  // The whole test, from the channel's connect to the last completion: a QP whose completions
  // trickle in (each within timeout_ms, all of them never) still ends by then, named
  // (rdma.rc.too_slow). Absent: the controller's own formula (pair::rc_answer_bound_ms).
  int budget_ms = 0;
};
RcArgs parse_rc_args(const Json& args);

// The "ofi_rdm" request: one side of the RDM point-to-point test over libfabric
// (fabric/ofi_rdm), run in a runner child (transport_child.h). The endpoint addresses travel on
// the agents' own channel (as rdma_rc's endpoint info does): the server listens on
// local_addr:port, the client connects to peer_addr:port.
struct OfiArgs {
  std::string role;      // "server" | "client"
  std::string provider;  // libfabric provider name: "efa", "tcp" (letters, digits, '_', ';', '-')
  std::string local_addr, peer_addr;  // peer_addr: client only
  uint16_t port = 0;
  uint64_t bw_size_bytes = 1 << 20;
  int bw_messages = 256, window = 16, lat_iters = 1000, warmup_iters = 50;
  int timeout_ms = 10000;  // each wait on the peer
  int budget_ms = 120000;  // the whole test: the runner child is killed after it
};
OfiArgs parse_ofi_args(const Json& args);

// The "allreduce" request's arguments (throws wire::WireError naming the field).
TransportArgs parse_transport_args(const Json& args);

// Device names are sysfs names (mlx5_0, rxe0): 1..64 letters, digits, '_' and '-'.
bool is_rdma_device_name(const std::string& s);
RdmaPortArgs parse_rdma_port_args(const Json& extra);

// The addresses a request makes this agent contact (port_probe addr, tcp_measure / rdma_rc client
// peer_addr, allreduce peer_addr and every ring_addrs entry but its own): each must be one the
// controller sent once with "set_peers" (the addresses it vouches for, fabric/pair/
// session_peers.h), so an agent cannot be pointed at other hosts, by a compromised peer's claims
// or otherwise. Call after validate_request.
std::vector<std::string> request_targets(const wire::Request& req);
// The "set_peers" addresses: 1..wire::kMaxPeerAddresses IPv4 literals.
std::vector<std::string> parse_peer_addresses(const Json& args);

// Interface names are at most 15 characters (IFNAMSIZ - 1); "" = none given.
std::string ifname_arg(const Json& a, const char* field);
// "tcp_measure" arguments; token is the session's.
tcp::LinkTestSpec parse_link_spec(const Json& a, const std::string& token);
// Throws wire::WireError kBadMessage for an unknown op or any bad argument.
void validate_request(const wire::Request& req);

}  // namespace fabkit::agent
