// An RC (reliable connected) point-to-point test in the manner of perftest's ib_write_bw and
// ib_send_lat, written against the VerbsApi seam only. The two sides exchange RcEndpointInfo out
// of band through a function the caller supplies (the pair agent sends it over its TCP channel),
// diagnose the pair before connecting, then connect (INIT -> RTR -> RTS) and measure.
// Real measurements need RDMA hardware; tests drive it through the fake VerbsApi.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/file_reader.h"
#include "common/finding.h"
#include "common/json.h"
#include "common/latency_histogram.h"
#include "verbs/verbs_api.h"

namespace fabkit::fabric::rdma {

struct RcEndpointInfo {
  uint16_t lid = 0;
  uint32_t qpn = 0;
  uint32_t psn = 0;  // 24 bits
  verbs::Gid gid{};
  int gid_index = -1;  // -1: no GRH (InfiniBand within one subnet)
  int mtu = 0;         // bytes: the port's active MTU
  uint32_t rkey = 0;
  uint64_t addr = 0;   // start of the peer-writable buffer
  // Added so each side can diagnose the pair without a second round trip.
  std::string link_layer;  // "InfiniBand" | "Ethernet"
  std::string gid_type;    // "IB" | "RoCE v1" | "RoCE v2" | "" (no GID used)
  std::string device;      // "mlx5_0:1", for messages
};

Json to_json(const RcEndpointInfo& e);
// Throws std::invalid_argument naming the field and value (a peer's malformed frame).
RcEndpointInfo endpoint_from_json(const Json& j);

// Sends ours, returns the peer's; a SysError (e.g. timeout) aborts the test with its text.
// Called twice per run: the endpoint info, then (after RTS) the same info again as a "ready"
// barrier so neither side sends to a QP that is not yet connected.
using RcExchange = std::function<Expected<RcEndpointInfo>(const RcEndpointInfo& mine)>;

enum class RcMode { kWriteBw, kSendLat };
enum class RcRole { kServer, kClient };

struct RcTestSpec {
  std::string device;  // "mlx5_0"
  int port = 1;
  int gid_index = -1;  // -1: RoCE picks the preferred RoCE v2 GID; InfiniBand uses no GRH
  RcRole role = RcRole::kClient;
  RcMode mode = RcMode::kWriteBw;
  uint32_t size_bytes = 65536;
  int iters = 1000;
  int warmup_iters = 10;
  int tx_depth = 128;      // outstanding RDMA writes (perftest's default)
  int timeout_ms = 5000;   // for each wait on the peer
  // The whole test, from the endpoint exchange to the last completion (0: rc_default_budget_ms).
  // Each wait is bounded by timeout_ms, but a QP whose completions trickle in just inside it
  // would take iters x timeout_ms; the budget ends that too, by name (rdma.rc.too_slow).
  int budget_ms = 0;
  // Asked at most every kPeerCheckMs while waiting for completions: a non-empty answer means the
  // peer has given up (its reason), so this side stops now instead of waiting out its budget.
  std::function<std::string()> peer_stopped;
  // The GRH's traffic class and the address vector's service level, as NCCL sets them from
  // NCCL_IB_TC / NCCL_IB_SL (ib_service_class_from_env): the test runs in the job's QoS class.
  int traffic_class = 0;
  int service_level = 0;
};

inline constexpr int kPeerCheckMs = 100;

// The budget for a whole test when the caller gives none: set-up and the last completion at
// timeout_ms each, the transfer at a pessimistic 100 Mbit/s (write_bw: soft-RoCE under qemu's
// emulation measured 0.12-0.2 Gbit/s) or 50 ms per round trip (send_lat: 44 ms measured there),
// capped at an hour.
int rc_default_budget_ms(RcMode mode, uint32_t size_bytes, int iters, int timeout_ms);

// NCCL's own GRH hop limit (src/transport/net_ib: ah_attr.grh.hop_limit = 255): RoCE v2 across
// routers needs more than 1 hop, and 1 made routed RoCE fail here while NCCL worked.
inline constexpr int kGrhHopLimit = 255;

// NCCL_IB_TC (0..255, default 0) and NCCL_IB_SL (0..15, default 0) from `vars` (the agent's
// environment, where the profile's emit-env puts them). nullopt + *error naming the variable,
// its value and the range when one is malformed.
struct IbServiceClass {
  int traffic_class = 0;
  int service_level = 0;
};
std::optional<IbServiceClass> ib_service_class_from_env(const std::map<std::string, std::string>& vars,
                                                        std::string* error);

struct RcTestResult {
  std::string status = "failed";  // "ok" | "failed"
  std::string reason;             // why it failed, with the verbs call and errno
  std::vector<Finding> diagnoses;  // before and during the run
  int path_mtu = 0;                // bytes used on the connection
  uint64_t bytes = 0;              // payload moved in the timed part
  int iters = 0;
  std::optional<double> bw_gbps;       // write_bw: Gbit/s (1e9 bits/s, comparable to rate_gbps)
  std::optional<double> lat_us_median;  // send_lat: one-way, half the round trip
  std::optional<double> lat_us_p99;
  std::optional<LatencyHistogram> lat_histogram;  // send_lat client: every timed half round trip
  std::optional<bool> data_verified;    // write_bw server: the buffer holds the client's pattern
};

Json to_json(const RcTestResult& r);

RcTestResult run_rc_test(verbs::VerbsApi& api, const RcTestSpec& spec, const RcExchange& exchange);

// Pure: what will stop these two endpoints from connecting, or slow them (codes rdma.rc.*).
std::vector<Finding> diagnose_rc_pair(const RcEndpointInfo& local, const RcEndpointInfo& remote);
// ibv_reg_mr failed: EPERM/ENOMEM mean the memlock limit (with the exact fix).
Finding diagnose_reg_mr_failure(const SysError& e, const std::string& subject);
// enum ibv_wc_status as a name: "RETRY_EXC_ERR (12)".
std::string wc_status_name(int status);
// Median and 99th percentile (nearest rank) of samples; nullopt when empty.
std::optional<double> percentile(std::vector<double> samples, double p);

}  // namespace fabkit::fabric::rdma
