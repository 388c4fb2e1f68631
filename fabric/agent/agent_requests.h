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

struct TransportArgs {
  int rank = 0;                 // 0 listens on local_addr:port, 1 connects to peer_addr:port
  std::string local_addr, peer_addr, ifname;
  uint16_t port = 0;
  std::vector<uint64_t> sizes_bytes;
  int iters = 20, warmup_iters = 5, timeout_ms = 30000;
  Json extra = Json::object();  // transport-specific (hca, ib_port, gid_index)
};

// The "allreduce" request's arguments (throws wire::WireError naming the field).
TransportArgs parse_transport_args(const Json& args);

// Interface names are at most 15 characters (IFNAMSIZ - 1); "" = none given.
std::string ifname_arg(const Json& a, const char* field);
// "tcp_measure" arguments; token is the session's.
tcp::LinkTestSpec parse_link_spec(const Json& a, const std::string& token);
// Throws wire::WireError kBadMessage for an unknown op or any bad argument.
void validate_request(const wire::Request& req);

}  // namespace fabkit::agent
