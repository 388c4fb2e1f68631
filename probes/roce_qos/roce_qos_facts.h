// Probe 11, RoCE lossless QoS: whether the priority NCCL's RDMA traffic lands on is lossless the
// way the fabric expects (PFC on it, ECN/DCQCN on it, a trust mode that matches how the traffic
// class is expressed, matching MTUs, no pause storm or rising discards). Per RoCE port and its
// netdev it gathers:
//  - the kernel's DCB state over rtnetlink (RTM_GETDCB, dcb_netlink.cc): IEEE 802.1Qaz PFC, ETS and
//    the APP table (DSCP entries there are trust dscp on mlx5), CEE PFC as the fallback;
//  - sysfs: qos/trust, ecn/roce_np|roce_rp (MLNX_OFED), the RDMA port's tc/N/traffic_class, MTU;
//  - the NIC's statistics (SIOCETHTOOL ETH_SS_STATS, ethtool_stats.cc), read twice for rises.
// DCB and the statistics go through QosKernel (qos_kernel.h): the live kernel, or a fixture replay.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/finding.h"
#include "common/json.h"
#include "probes/probe_context.h"

namespace fabkit::probes {

class QosKernel;
struct RdmaFacts;
struct NcclEnvFacts;

// One IEEE 802.1Qaz APP entry: selector 5 (DSCP) maps DSCP `protocol` to `priority`; selector 1
// with protocol 0 is the port's default priority.
struct DcbApp {
  int selector = 0;
  int protocol = 0;
  int priority = 0;
};

// What the kernel's DCB interface answered for one netdev.
struct DcbState {
  // "ok"; "not_supported" (EOPNOTSUPP: the driver has no DCB operations, e.g. veth);
  // "no_device" (ENODEV); "error" (the exchange failed: detail says how); "not_read" (a
  // --sysroot run without --qos-replay: this machine's kernel would not describe the capture).
  std::string status = "not_read";
  std::string detail;
  std::optional<int> dcbx;                // DCB_ATTR_DCBX bits (DCB_CAP_DCBX_*): who manages DCB
  std::string pfc_source;                 // "ieee" | "cee" | "" (no PFC answer)
  std::optional<int> pfc_enabled;         // bit p: PFC on priority p
  std::optional<int> pfc_cap;             // how many priorities can be lossless at once
  std::optional<int> pfc_delay;           // ieee_pfc.delay (bit times of allowed cable delay)
  std::vector<uint64_t> pfc_requests;     // pause frames sent per priority (8, IEEE only)
  std::vector<uint64_t> pfc_indications;  // pause frames received per priority (8, IEEE only)
  std::vector<int> prio_tc;               // ETS: priority -> hardware traffic class (8 when known)
  std::vector<int> tc_tx_bw;              // ETS: percent per traffic class
  std::vector<int> tc_tsa;                // ETS: IEEE_8021QAZ_TSA_* per traffic class
  std::vector<DcbApp> apps;
};

// The NIC's ethtool statistics that show loss or congestion (names with pause, discard, drop,
// out_of_buffer, ecn, cnp, marked or storm in them), from the first read and the rise at the
// second.
struct EthtoolCounters {
  std::string status = "not_read";  // "ok" | "not_supported" | "no_device" | "error" | "not_read"
  std::string detail;
  int stats_total = 0;  // every counter the driver reports (ETH_SS_STATS), kept or not
  std::map<std::string, uint64_t> values;
  std::map<std::string, uint64_t> deltas;  // second read - first (only when read twice)
};

struct RoceQosPort {
  std::string device;  // "mlx5_0"
  int port = 0;
  std::string netdev;  // "eth2"
  bool active = false;
  // A software RoCE device (rxe, sysfs `parent`): no NIC under it, so no DCB, PFC or trust.
  bool soft_roce = false;
  std::optional<int> netdev_mtu;  // /sys/class/net/IF/mtu
  std::optional<int> active_mtu;  // the RDMA port's active MTU (verbs; sysfs has none)
  std::optional<int> roce_v2_gid_index;
  // MLNX_OFED's /sys/class/net/IF/qos/trust ("pcp" | "dscp"); absent on upstream kernels.
  std::optional<std::string> trust_file;
  // /sys/class/infiniband/DEV/tc/PORT/traffic_class (MLNX_OFED): the traffic class every RoCE QP
  // of the port uses; the raw text and the number in it.
  std::optional<std::string> traffic_class_text;
  std::optional<int> traffic_class;
  // ecn/roce_np/enable/P and ecn/roce_rp/enable/P (MLNX_OFED): priority -> enabled.
  std::map<int, bool> ecn_np, ecn_rp;
  // The other numeric files of ecn/roce_rp and ecn/roce_np (DCQCN parameters where exposed).
  std::map<std::string, int64_t> dcqcn_rp, dcqcn_np;
  DcbState dcb;
  EthtoolCounters ethtool;
};

struct RoceQosFacts {
  // "live": this kernel; "replay": --qos-replay FILE; "sysroot": sysfs only (DCB/ethtool not read).
  std::string source = "live";
  std::string replay_file;
  int counter_interval_ms = 0;  // > 0: ethtool deltas are the rise over this interval
  // NCCL's settings for the traffic (the nccl_env probe's resolution: environment or nccl.conf).
  std::optional<std::string> nccl_ib_tc, nccl_ib_sl;
  std::string nccl_ib_tc_source, nccl_ib_sl_source;
  std::vector<RoceQosPort> ports;  // every RDMA port whose link layer is Ethernet
  std::vector<SysError> errors;
  // Between the two ethtool reads (not in the JSON): the kernel answering them and when the first
  // read was taken.
  std::shared_ptr<QosKernel> kernel;
  std::chrono::steady_clock::time_point first_read{};
};

// Where NCCL's RoCE packets land, derived from the facts (pure): the traffic class byte the QPs
// carry, how the NIC classifies them (trust), and the priority that results.
struct NcclTrafficPath {
  int traffic_class = 0;        // the IP TOS / traffic class byte: DSCP << 2 | ECN bits
  std::string tc_source;        // "port traffic_class" | "NCCL_IB_TC" | "NCCL default (0)"
  int dscp = 0;                 // traffic_class >> 2
  std::string trust;            // "dscp" | "pcp" | "unknown"
  std::string trust_source;     // "qos/trust" | "DCB APP table" | "no DSCP APP entries" | ...
  int sl = 0;                   // NCCL_IB_SL (default 0)
  std::optional<int> priority;  // the 802.1p priority; nullopt when trust is unknown
  std::string priority_source;  // "DSCP 26 -> 3 (APP table)" ...
};
NcclTrafficPath nccl_traffic_path(const RoceQosFacts& facts, const RoceQosPort& port);

// The live kernel (netlink + ioctl) unless ctx.options.qos_replay names a fixture; under
// --sysroot without a replay DCB and ethtool stay "not_read" (sysfs still comes from the tree).
// Takes the first ethtool read; reread_roce_qos takes the second.
RoceQosFacts gather_roce_qos(const ProbeContext& ctx, const RdmaFacts& rdma,
                             const NcclEnvFacts& nccl);
// The second ethtool read, at least min_interval_ms after the first (the node probe calls it after
// the other probes, so their time is the interval); a replay uses its recorded interval.
void reread_roce_qos(RoceQosFacts& facts, int min_interval_ms);
// One port's sysfs files under sys_root (the MLNX_OFED qos/ecn files, the RDMA port's tc, MTU).
void read_port_sysfs(const std::filesystem::path& sys_root, RoceQosPort& port,
                     std::vector<SysError>& errors);
// A netdev's DCB state and first ethtool read through `kernel` (the integration test runs these
// on veth in a network namespace).
DcbState read_dcb(QosKernel& kernel, const std::string& netdev);
EthtoolCounters read_ethtool_counters(QosKernel& kernel, const std::string& netdev);
// The second read: deltas against `counters`' values (a counter that went down was reset: its new
// value is the rise).
void reread_ethtool_counters(QosKernel& kernel, const std::string& netdev,
                             EthtoolCounters& counters);
// Whether an ethtool counter name is one the probe keeps (loss and congestion signals).
bool is_qos_counter(const std::string& name);

// Pure.
std::vector<Finding> judge_roce_qos(const RoceQosFacts& facts);
Json to_json(const RoceQosFacts& facts);

// The RoCE MTU a netdev MTU allows: the largest IB MTU (256..4096) that fits after the RoCE v2
// headers (drivers/infiniband/core: iboe_get_mtu subtracts GRH+UDP+BTH+ext+ICRC = 96 bytes).
// A soft-RoCE device (rxe) computes it with its own header allowance.
int roce_mtu_for_netdev_mtu(int netdev_mtu, bool soft_roce = false);
// "Global tclass=106" (MLNX_OFED) or "106" -> 106; nullopt otherwise.
std::optional<int> parse_traffic_class(const std::string& text);

}  // namespace fabkit::probes
