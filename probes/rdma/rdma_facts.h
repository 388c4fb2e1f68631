// Probe 1, RDMA devices: HCAs, ports, link state, rate, LIDs, GID tables, net devices. Gathered
// from verbs when a VerbsApi with devices is at hand, else from /sys/class/infiniband (also the
// source under --sysroot).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
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
  std::string netdev;                  // empty: none
};

struct RdmaPort {
  int port = 0;
  std::optional<verbs::PortState> state;
  std::optional<verbs::PhysState> phys_state;
  std::optional<verbs::LinkLayer> link_layer;
  std::optional<double> rate_gbps;  // the sysfs `rate` number (data rate, e.g. 100 for 4X EDR)
  std::string rate_text;            // "100 Gb/sec (4X EDR)"
  std::optional<int> active_mtu;    // bytes (verbs only; sysfs has no MTU attribute)
  std::optional<int> lid;
  std::optional<int> sm_lid;
  std::optional<std::string> netdev;
  bool gids_known = false;  // the GID table was readable (sysfs gids/ present, or verbs)
  std::vector<RdmaGid> gids;  // used entries only (all-zero GIDs are empty slots)
  std::optional<int> roce_v2_gid_index;
  // Error and congestion counters: counters/* (the IB PMA's, 4- to 32-bit, saturating) and
  // hw_counters/* (the driver's, 64-bit), by file name. Deltas over the interval when read twice.
  std::map<std::string, uint64_t> counters;
  std::map<std::string, uint64_t> counter_deltas;
};

struct RdmaDevice {
  std::string name;
  std::optional<std::string> node_guid;
  std::optional<std::string> fw_ver;
  std::vector<RdmaPort> ports;
};

struct RdmaFacts {
  std::string source = "none";  // "verbs" | "sysfs" | "none"
  int counter_interval_ms = 0;  // > 0: counter_deltas hold the rise over this interval
  std::vector<RdmaDevice> devices;
  std::vector<SysError> errors;
};

RdmaFacts gather_rdma(const ProbeContext& ctx);
RdmaFacts gather_rdma_sysfs(const std::filesystem::path& sys_root);
RdmaFacts gather_rdma_verbs(verbs::VerbsApi& api);

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
