#include "fabric/agent/agent_requests.h"

#include <algorithm>
#include <cctype>

#include "fabric/wire/wire_error.h"

namespace fabkit::agent {

using wire::get_int;
using wire::get_int_or;
using wire::get_ipv4;

std::string ifname_arg(const Json& a, const char* field) {
  if (!a.contains(field)) return {};
  std::string s = wire::get_string(a, field, 15);
  for (char c : s)
    if (c == '/' || c <= ' ' || c > '~')
      throw wire::WireError(wire::WireErrorKind::kBadMessage,
                            std::string("field '") + field + "' is not an interface name");
  return s;
}

tcp::LinkTestSpec parse_link_spec(const Json& a, const std::string& token) {
  tcp::LinkTestSpec s;
  s.peer_addr = get_ipv4(a, "peer_addr");
  s.port = static_cast<uint16_t>(get_int(a, "port", 1, 65535));
  s.local_addr = get_ipv4(a, "local_addr");
  s.local_ifname = ifname_arg(a, "local_ifname");
  s.token = token;
  s.pings = static_cast<int>(get_int_or(a, "pings", 1, 100000, 1000));
  s.streams = static_cast<int>(get_int_or(a, "streams", 1, 64, 4));
  s.duration_ms = static_cast<int>(get_int_or(a, "duration_ms", 10, 60000, 1000));
  s.max_bytes = static_cast<uint64_t>(get_int_or(a, "max_bytes", 1, int64_t{1} << 40, int64_t{4} << 30));
  s.connect_timeout_ms = static_cast<int>(get_int_or(a, "connect_timeout_ms", 1, kMaxTimeoutMs, 2000));
  return s;
}

namespace {

// "ring_orders" (optional): 1..128 permutations of 0..world_size-1 (128 = the Walecki orders of
// the largest world, 256), each naming the ranks in ring order.
std::vector<std::vector<int>> parse_ring_orders(const Json& a, int world_size) {
  std::vector<std::vector<int>> out;
  auto it = a.find("ring_orders");
  if (it == a.end()) return out;
  const std::string fix =
      "field 'ring_orders' must be an array of 1..128 orders, each a permutation of the " +
      std::to_string(world_size) + " ranks 0.." + std::to_string(world_size - 1);
  if (!it->is_array() || it->empty() || it->size() > 128)
    throw wire::WireError(wire::WireErrorKind::kBadMessage, fix);
  for (const auto& order : *it) {
    if (!order.is_array() || static_cast<int>(order.size()) != world_size)
      throw wire::WireError(wire::WireErrorKind::kBadMessage, fix);
    std::vector<char> seen(static_cast<size_t>(world_size), 0);
    std::vector<int> ranks;
    for (const auto& r : order) {
      if (!r.is_number_integer() || r.get<int64_t>() < 0 || r.get<int64_t>() >= world_size ||
          seen[static_cast<size_t>(r.get<int64_t>())])
        throw wire::WireError(wire::WireErrorKind::kBadMessage,
                              fix + " (order " + std::to_string(out.size()) + " holds " +
                                  r.dump().substr(0, 32) + ")");
      seen[static_cast<size_t>(r.get<int64_t>())] = 1;
      ranks.push_back(static_cast<int>(r.get<int64_t>()));
    }
    out.push_back(std::move(ranks));
  }
  return out;
}

}  // namespace

TransportArgs parse_transport_args(const Json& a) {
  TransportArgs t;
  // 256 ranks bounds what one request makes an agent hold (one address each); far above any
  // group the pair controller or the cluster search starts.
  t.world_size = static_cast<int>(get_int_or(a, "world_size", 2, 256, 2));
  t.rank = static_cast<int>(get_int(a, "rank", 0, t.world_size - 1));
  t.local_addr = get_ipv4(a, "local_addr");
  t.peer_addr = get_ipv4(a, "peer_addr");
  t.ring_orders = parse_ring_orders(a, t.world_size);
  if (t.world_size > 2 || !t.ring_orders.empty()) {
    auto ring = a.find("ring_addrs");
    if (ring == a.end() || !ring->is_array() || static_cast<int>(ring->size()) != t.world_size)
      throw wire::WireError(wire::WireErrorKind::kBadMessage,
                            "field 'ring_addrs' must hold world_size (" + std::to_string(t.world_size) +
                                ") IPv4 addresses");
    for (const auto& addr : *ring) t.ring_addrs.push_back(get_ipv4(Json{{"addr", addr}}, "addr"));
    // The ring and the per-rank fields must agree, so the peer check (request_targets: peer_addr)
    // covers the one address this rank connects to.
    const auto right = static_cast<size_t>((t.rank + 1) % t.world_size);
    if (t.ring_addrs[static_cast<size_t>(t.rank)] != t.local_addr || t.ring_addrs[right] != t.peer_addr)
      throw wire::WireError(wire::WireErrorKind::kBadMessage,
                            "fields 'local_addr' and 'peer_addr' must equal ring_addrs[rank] and ring_addrs[rank+1]");
  }
  t.port = static_cast<uint16_t>(get_int(a, "port", 1, 65535));
  t.ifname = ifname_arg(a, "ifname");
  auto sizes = a.find("sizes_bytes");
  if (sizes == a.end() || !sizes->is_array() || sizes->empty() || sizes->size() > 64)
    throw wire::WireError(wire::WireErrorKind::kBadMessage,
                          "field 'sizes_bytes' must be an array of 1..64 sizes");
  for (const auto& s : *sizes) {
    // 4 bytes (one float) .. 4 GiB: a hostile size must not make an agent allocate unbounded memory.
    if (!s.is_number_unsigned() || s.get<uint64_t>() < 4 || s.get<uint64_t>() > (4ull << 30))
      throw wire::WireError(wire::WireErrorKind::kBadMessage,
                            "field 'sizes_bytes' holds " + s.dump() + "; sizes are 4 B .. 4 GiB");
    t.sizes_bytes.push_back(s.get<uint64_t>());
  }
  t.iters = static_cast<int>(get_int_or(a, "iters", 1, 100000, 20));
  t.warmup_iters = static_cast<int>(get_int_or(a, "warmup_iters", 0, 100000, 5));
  t.timeout_ms = static_cast<int>(get_int_or(a, "timeout_ms", 1, 600000, 30000));
  if (a.contains("extra")) t.rdma = parse_rdma_port_args(a["extra"]);
  t.progress = wire::get_bool_or(a, "progress", false);
  // A ring session runs the sweep once per order over connections made once.
  const int64_t sweeps = std::max<int64_t>(1, static_cast<int64_t>(t.ring_orders.size()));
  const int64_t every_wait =
      int64_t{t.timeout_ms} *
      (sweeps * static_cast<int64_t>(t.sizes_bytes.size()) * (t.iters + t.warmup_iters) + 4);
  t.sweep_timeout_ms = static_cast<int>(
      get_int_or(a, "sweep_timeout_ms", 1, kMaxSweepTimeoutMs, std::min(every_wait, kMaxSweepTimeoutMs)));
  return t;
}

bool is_rdma_device_name(const std::string& s) {
  bool good = !s.empty() && s.size() <= 64;
  for (char c : s) good = good && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  return good;
}

RdmaPortArgs parse_rdma_port_args(const Json& e) {
  if (!e.is_object()) throw wire::WireError(wire::WireErrorKind::kBadMessage, "field 'extra' must be an object");
  for (auto it = e.begin(); it != e.end(); ++it) {
    const std::string& k = it.key();
    if (k != "hca" && k != "ib_port" && k != "gid_index" && k != "link_layer" && k != "rate_gbps")
      throw wire::WireError(wire::WireErrorKind::kBadMessage,
                            "field 'extra." + k.substr(0, 64) +
                                "' is not one of hca, ib_port, gid_index, link_layer, rate_gbps");
  }
  RdmaPortArgs r;
  if (e.contains("hca")) {
    r.hca = wire::get_string(e, "hca", 64);
    if (!is_rdma_device_name(r.hca))
      throw wire::WireError(wire::WireErrorKind::kBadMessage,
                            "field 'extra.hca' = '" + r.hca + "' is not an RDMA device name (letters, digits, _ and -)");
  }
  r.ib_port = static_cast<int>(get_int_or(e, "ib_port", 1, 255, 1));
  r.gid_index = static_cast<int>(get_int_or(e, "gid_index", -1, 255, -1));
  if (e.contains("link_layer")) wire::get_string(e, "link_layer", 32);
  if (e.contains("rate_gbps") && !e["rate_gbps"].is_null() && !e["rate_gbps"].is_number())
    throw wire::WireError(wire::WireErrorKind::kBadMessage, "field 'extra.rate_gbps' must be a number or null");
  return r;
}

std::vector<std::string> parse_peer_addresses(const Json& a) {
  auto it = a.find("addresses");
  if (it == a.end() || !it->is_array() || it->empty() || it->size() > wire::kMaxPeerAddresses)
    throw wire::WireError(wire::WireErrorKind::kBadMessage,
                          "field 'addresses' must be an array of 1.." +
                              std::to_string(wire::kMaxPeerAddresses) + " IPv4 addresses");
  std::vector<std::string> out;
  for (const auto& x : *it) {
    if (!x.is_string() || !wire::is_ipv4_literal(x.get<std::string>()))
      throw wire::WireError(wire::WireErrorKind::kBadMessage,
                            "field 'addresses' holds " + x.dump().substr(0, 64) + ", not an IPv4 address literal");
    out.push_back(x.get<std::string>());
  }
  return out;
}

std::vector<std::string> request_targets(const wire::Request& req) {
  const Json& a = req.args;
  if (req.op == "port_probe") return {get_ipv4(a, "addr")};
  if (req.op == "tcp_measure") return {get_ipv4(a, "peer_addr")};
  if (req.op == "allreduce") {
    // Every address of the ring but our own: Gloo's store makes every rank connect to rank 0
    // (ring_addrs[0]), not only to its right neighbour (peer_addr).
    TransportArgs t = parse_transport_args(a);
    std::vector<std::string> out = {t.peer_addr};
    for (size_t r = 0; r < t.ring_addrs.size(); ++r)
      if (static_cast<int>(r) != t.rank) out.push_back(t.ring_addrs[r]);
    return out;
  }
  if (req.op == "rdma_rc" && wire::get_string(a, "role", 16) == "client") return {get_ipv4(a, "peer_addr")};
  if (req.op == "ofi_rdm" && wire::get_string(a, "role", 16) == "client") return {get_ipv4(a, "peer_addr")};
  return {};
}

namespace {

// The side of a two-agent test (the RC and libfabric RDM tests): "server" or "client".
std::string parse_role(const Json& a) {
  std::string role = wire::get_string(a, "role", 16);
  if (role != "server" && role != "client")
    throw wire::WireError(wire::WireErrorKind::kBadMessage,
                          "field 'role' = '" + role + "'; expected server or client");
  return role;
}

}  // namespace

RcArgs parse_rc_args(const Json& a) {
  RcArgs r;
  r.role = parse_role(a);
  r.mode = wire::get_string(a, "mode", 16);
  if (r.mode != "write_bw" && r.mode != "send_lat")
    throw wire::WireError(wire::WireErrorKind::kBadMessage,
                          "field 'mode' = '" + r.mode + "'; expected write_bw or send_lat");
  r.device = wire::get_string(a, "device", 64);
  if (!is_rdma_device_name(r.device))
    throw wire::WireError(wire::WireErrorKind::kBadMessage,
                          "field 'device' = '" + r.device + "' is not an RDMA device name");
  r.ib_port = static_cast<int>(get_int(a, "ib_port", 1, 255));
  r.gid_index = static_cast<int>(get_int_or(a, "gid_index", -1, 255, -1));
  r.local_addr = get_ipv4(a, "local_addr");
  if (r.role == "client") r.peer_addr = get_ipv4(a, "peer_addr");
  r.port = static_cast<uint16_t>(get_int(a, "port", 1, 65535));
  // Up to 16 MiB per message: perftest's sweep tops out at 8 MiB; this bounds the agent's buffer.
  r.size_bytes = static_cast<uint32_t>(get_int_or(a, "size_bytes", 1, 16 << 20, r.mode == "send_lat" ? 2 : 65536));
  r.iters = static_cast<int>(get_int_or(a, "iters", 1, 1000000, r.mode == "send_lat" ? 1000 : 5000));
  r.warmup_iters = static_cast<int>(get_int_or(a, "warmup_iters", 0, 100000, 10));
  r.tx_depth = static_cast<int>(get_int_or(a, "tx_depth", 1, 1024, 128));
  r.timeout_ms = static_cast<int>(get_int_or(a, "timeout_ms", 1, kMaxTimeoutMs, 10000));
  r.budget_ms = static_cast<int>(get_int_or(a, "budget_ms", 1, kMaxSweepTimeoutMs, 0));
  return r;
}

OfiArgs parse_ofi_args(const Json& a) {
  OfiArgs r;
  r.role = parse_role(a);
  r.provider = wire::get_string(a, "provider", 32);
  const bool name_ok = !r.provider.empty() && std::all_of(r.provider.begin(), r.provider.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ';' || c == '-';
  });
  if (!name_ok)
    throw wire::WireError(wire::WireErrorKind::kBadMessage,
                          "field 'provider' = '" + r.provider + "' is not a libfabric provider name");
  r.local_addr = get_ipv4(a, "local_addr");
  if (r.role == "client") r.peer_addr = get_ipv4(a, "peer_addr");
  r.port = static_cast<uint16_t>(get_int(a, "port", 1, 65535));
  // Up to 16 MiB per message, as rdma_rc: this bounds the agent's buffers.
  r.bw_size_bytes = static_cast<uint64_t>(get_int_or(a, "bw_size_bytes", 1, 16 << 20, 1 << 20));
  r.bw_messages = static_cast<int>(get_int_or(a, "bw_messages", 1, 1000000, 256));
  r.window = static_cast<int>(get_int_or(a, "window", 1, 1024, 16));
  r.lat_iters = static_cast<int>(get_int_or(a, "lat_iters", 1, 1000000, 1000));
  r.warmup_iters = static_cast<int>(get_int_or(a, "warmup_iters", 0, 100000, 50));
  r.timeout_ms = static_cast<int>(get_int_or(a, "timeout_ms", 1, kMaxTimeoutMs, 10000));
  r.budget_ms = static_cast<int>(get_int_or(a, "budget_ms", 1, kMaxSweepTimeoutMs, 120000));
  return r;
}

void validate_request(const wire::Request& req) {
  const Json& a = req.args;
  if (req.op == "facts" || req.op == "port_close" || req.op == "transports") return;
  if (req.op == "set_peers") return void(parse_peer_addresses(a));
  if (req.op == "tcp_serve" || req.op == "free_port") {
    ifname_arg(a, "ifname");
    return void(get_ipv4(a, "addr"));
  }
  if (req.op == "tcp_stop") return void(get_int(a, "server_id", 1, INT32_MAX));
  if (req.op == "tcp_measure") return void(parse_link_spec(a, ""));
  if (req.op == "port_listen") {
    get_ipv4(a, "addr");
    return void(get_int(a, "port", 1, 65535));
  }
  if (req.op == "port_probe") {
    get_ipv4(a, "addr");
    get_int(a, "port", 1, 65535);
    get_ipv4(a, "local_addr");
    return void(get_int(a, "timeout_ms", 1, kMaxTimeoutMs));
  }
  if (req.op == "rdma_rc") return void(parse_rc_args(a));
  if (req.op == "ofi_rdm") return void(parse_ofi_args(a));
  if (req.op == "allreduce") {
    wire::get_string(a, "transport", 64);
    return void(parse_transport_args(a));
  }
  throw wire::WireError(wire::WireErrorKind::kBadMessage, "unknown op '" + req.op + "'");
}

}  // namespace fabkit::agent
