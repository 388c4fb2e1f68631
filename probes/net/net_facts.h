// Probe 3, IP interfaces: what exists (getifaddrs + /sys/class/net), which interface NCCL would
// bind (its own selection order, reproduced), and which one it should bind (on the peer's
// subnet). NCCL picks silently; a wrong pick shows up hours later as a hang or as TCP at 1 Gb/s.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/finding.h"
#include "common/json.h"
#include "common/net_route.h"
#include "probes/net/nccl_list.h"
#include "probes/probe_context.h"

namespace fabkit::probes {

struct IfAddress {
  std::string family;  // "ipv4" | "ipv6"
  std::string address;
  int prefix_len = 0;
};

struct NetInterface {
  std::string name;
  int ifindex = 0;
  std::string operstate;  // sysfs operstate: "up", "down", "unknown", "dormant", ...
  bool up = false;        // IFF_UP: administratively up
  bool running = false;   // IFF_RUNNING: up and the link is operational (what NCCL checks)
  std::optional<int> mtu;
  std::optional<int64_t> speed_mbps;  // null: virtual links and down links report no speed
  bool is_virtual = false;
  std::string kind;     // physical loopback bridge veth docker virbr ipoib other
  std::string subtype;  // finer detail for "other": bond, vlan, tun, macvlan, ...
  int arphrd_type = 0;  // sysfs `type`: 1 Ethernet, 32 InfiniBand (IPoIB), 772 loopback
  std::optional<std::string> pci_device;  // basename of the `device` link
  std::vector<IfAddress> addresses;
  int enum_order = 0;  // position of its first address in getifaddrs order (NCCL's scan order)
};

// Where a setting came from: "environment", a config file path, or "unset".
struct NetSettings {
  std::optional<std::string> socket_ifname;
  std::string socket_ifname_source = "unset";
  std::optional<std::string> comm_id;        // NCCL_COMM_ID: "ip:port"
  std::optional<std::string> socket_family;  // NCCL_SOCKET_FAMILY: AF_INET | AF_INET6
  std::optional<std::string> gloo_socket_ifname;
};

struct PeerFacts {
  std::string given;  // as typed
  std::string via;    // "--peer" | "MASTER_ADDR"
  std::vector<std::string> addresses;   // resolved
  std::optional<std::string> error;     // resolution failed or timed out
  std::vector<std::string> on_subnet_of;  // local interfaces whose subnet holds the peer
  std::optional<std::string> route_interface;  // kernel's route to the peer (live only)
};

struct NcclPick {
  std::optional<std::string> name;  // the interface NCCL binds first (bootstrap, OOB)
  std::vector<std::string> all;     // every interface NET/Socket would use (same step)
  std::string step;    // "NCCL_SOCKET_IFNAME", "ib", "NCCL_COMM_ID subnet", "^docker,lo,virbr", ...
  std::string reason;
};

struct Recommendation {
  std::optional<std::string> name;
  std::string reason;
};

struct NetFacts {
  std::string source;  // "getifaddrs+sysfs" (live) | "sysfs" (--sysroot: addresses unknown)
  bool addresses_known = true;
  // false: the tree has no sys/class/net (a capture of /sys/class/infiniband alone): nothing is
  // known about the interfaces, which is not the same as having none.
  bool interfaces_known = true;
  std::vector<NetInterface> interfaces;
  NetSettings settings;
  std::optional<NcclList> socket_ifname_list;  // parsed, when NCCL honours the value
  std::vector<std::string> socket_ifname_matched;
  std::optional<PeerFacts> peer;
  NcclPick nccl_pick;
  Recommendation recommended;
  std::vector<SysError> errors;
};

NetFacts gather_net(const ProbeContext& ctx, const NetSettings& settings);

// Name resolution with a deadline and the kernel's route choice live in common/net_route.h
// (fabtrain's comm uses them without linking this probe).
using ::fabkit::resolve_bounded;
using ::fabkit::route_source_address;

// Pure steps, exposed for tests.
// NCCL's ncclFindInterfaces order (src/misc/socket.cc): NCCL_SOCKET_IFNAME when longer than one
// character; else ib*, then the interface on NCCL_COMM_ID's subnet, then anything but
// docker/lo/virbr, then docker, lo, virbr. Only RUNNING interfaces with an address count.
NcclPick nccl_pick(const std::vector<NetInterface>& ifs, const NetSettings& s, bool addresses_known);
Recommendation recommend_interface(const std::vector<NetInterface>& ifs,
                                   const std::optional<PeerFacts>& peer, bool addresses_known);
bool address_in_subnet(const IfAddress& local, const std::string& remote);
// Kind from sysfs facts: name, type, whether a `device` link / `bridge` dir exist, DEVTYPE.
void classify_interface(NetInterface& i, bool has_device, bool is_bridge, bool has_lower_link,
                        const std::string& devtype);

std::vector<Finding> judge_net(const NetFacts& facts);
Json to_json(const NetFacts& facts);

}  // namespace fabkit::probes
