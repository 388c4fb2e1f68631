// Probe 1, RDMA devices: HCAs, ports, link state, rate, LIDs, GID tables, net devices. Gathered
// from verbs when a VerbsApi with devices is at hand, else from /sys/class/infiniband (also the
// source under --sysroot).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/finding.h"
#include "common/json.h"
#include "probes/probe_context.h"
#include "verbs/verbs_types.h"

namespace fabkit::probes {

struct RdmaGid {
  int index = 0;
  std::string gid;  // full hex form, as sysfs gids/N shows it
  std::optional<verbs::GidType> type;  // nullopt when gid_attrs/types is absent (old kernels)
  // The GID's net device as the kernel names it (sysfs gid_attrs/ndevs/N prints the name in
  // whichever network namespace the device is); empty: none, or not known.
  std::string netdev;
  uint32_t netdev_ifindex = 0;  // verbs only: the kernel's ifindex of it (0: none or unknown)
  std::optional<bool> netdev_here;  // that device is in this network namespace (nullopt: unknown)
};

// Where a port's net device is, seen from the network namespace fabcheck runs in. RDMA devices are
// shared by every namespace (the kernel's default rdma "shared" netns mode, and rxe cannot be
// moved at all), so a container sees every HCA of its host but only its own netdevs; RoCE needs a
// netdev here for its addresses (GIDs) and routes.
enum class NetdevPlace {
  kHere,            // a netdev of the port is in this namespace
  kOtherNamespace,  // the kernel names (or numbers) the netdev, but this namespace has none of it
  kNotCaptured,     // a --sysroot capture that cannot say (no device/net, no gid_attrs/ndevs, or
                    // no class/net to tell which namespace has the netdev it names)
  kNone,            // the live kernel knows no net device for the port
};
std::string to_string(NetdevPlace place);  // "here", "other_namespace", "not_captured", "none"

struct RdmaPort {
  int port = 0;
  std::optional<verbs::PortState> state;
  std::optional<verbs::PhysState> phys_state;
  std::optional<verbs::LinkLayer> link_layer;
  std::optional<double> rate_gbps;  // the sysfs `rate` number (data rate, e.g. 100 for 4X EDR)
  std::string rate_text;            // "100 Gb/sec (4X EDR)"
  std::optional<int> active_mtu;    // bytes (verbs only; sysfs has no MTU attribute)
  std::optional<int> max_mtu;       // bytes (verbs only)
  std::optional<int> lid;
  std::optional<int> sm_lid;
  // The port's net device: one in this namespace when it has one, else the one the kernel names.
  std::optional<std::string> netdev;
  NetdevPlace netdev_place = NetdevPlace::kNone;
  bool gids_known = false;  // the GID table was readable (sysfs gids/ present, or verbs)
  std::vector<RdmaGid> gids;  // used entries only (all-zero GIDs are empty slots)
  std::optional<int> roce_v2_gid_index;
  // Error and congestion counters: counters/* (the IB PMA's, 4- to 32-bit, saturating) and
  // hw_counters/* (the driver's, 64-bit), by file name. Deltas over the interval when read twice.
  std::map<std::string, uint64_t> counters;
  std::map<std::string, uint64_t> counter_deltas;
  // The counter directories the port has ("counters", "hw_counters"): mlx5 has both, rxe only
  // hw_counters, and a device seen from a non-initial network namespace neither (the kernel gives
  // its per-namespace copies of a device no counters).
  std::vector<std::string> counter_dirs;
  // Names read from hw_counters/ (64-bit driver counters: rxe's link_downed is one, and does not
  // saturate at the PMA's 8 bits).
  std::set<std::string> hw_counter_names;
};

struct RdmaDevice {
  std::string name;
  std::optional<std::string> node_guid;
  std::optional<std::string> fw_ver;
  // sysfs `parent`: the netdev a software RDMA device (rxe soft-RoCE, siw) was created on; nullopt
  // for hardware HCAs, which have no such attribute.
  std::optional<std::string> parent;
  std::string driver;  // sysfs device/driver's basename: "mlx5_core", "efa"; empty when unknown
  // Device-wide hw_counters/ (drivers that count per device rather than per port).
  std::map<std::string, uint64_t> counters;
  std::vector<RdmaPort> ports;
};

struct RdmaFacts {
  std::string source = "none";  // "verbs" | "sysfs" | "none"
  int counter_interval_ms = 0;  // > 0: counter_deltas hold the rise over this interval
  std::vector<RdmaDevice> devices;
  std::vector<SysError> errors;
};

RdmaFacts gather_rdma(const ProbeContext& ctx);
// sys_root's /sys/class/infiniband, with each port's netdev located (locate_netdevs) as a live
// system (`live`) or a capture.
RdmaFacts gather_rdma_sysfs(const std::filesystem::path& sys_root, bool live = false);
RdmaFacts gather_rdma_verbs(verbs::VerbsApi& api);

// Which namespace each port's netdev is in (netdev, netdev_place, gids[].netdev_here), from the
// GID table's ndevs (sysfs names the netdev whatever namespace it is in), verbs' ifindexes, rxe's
// `parent` and device/net; live: this process's namespace decides (if_nametoindex), a capture:
// its class/net. A port with netdevs here and elsewhere gets its RoCE v2 GID among its own.
void locate_netdevs(const std::filesystem::path& sys_root, bool live, RdmaFacts& facts);

// The error counters of every port from sysfs (ports/N/counters, ports/N/hw_counters), also when
// the rest came from verbs; with interval_ms > 0 read twice, and the rises kept as deltas.
void read_port_counters(const std::filesystem::path& sys_root, RdmaFacts& facts, int interval_ms);

bool has_active_ports(const RdmaFacts& facts);
size_t device_count(const RdmaFacts& facts);

// Pure.
std::vector<Finding> judge_rdma(const RdmaFacts& facts);
Json to_json(const RdmaFacts& facts);

// Sysfs value parsers, exposed for tests: "4: ACTIVE" -> code 4 (the number is what the kernel
// derived the name from); "100 Gb/sec (4X EDR)" -> 100; "2.5 Gb/sec (1X SDR)" -> 2.5.
std::optional<int> parse_sysfs_coded(const std::string& text);
std::optional<double> parse_sysfs_rate_gbps(const std::string& text);

}  // namespace fabkit::probes
