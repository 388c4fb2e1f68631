// Where NCCL's RoCE packets land (pure). NCCL puts NCCL_IB_TC (default 0) in the GRH traffic
// class of its QPs and NCCL_IB_SL (default 0) in the address handle's SL; MLNX_OFED's
// tc/PORT/traffic_class, when set, is used for every QP of the port instead. The NIC then picks
// the 802.1p priority (and the receiver classifies the packet) by the DSCP (TC >> 2) under trust
// dscp, or by the VLAN PCP, which is the SL's low 3 bits, under trust pcp.
#include <linux/dcbnl.h>

#include "probes/roce_qos/roce_qos_facts.h"

namespace fabkit::probes {
namespace {

std::optional<int> parse_small_int(const std::optional<std::string>& s, int max) {
  if (!s || s->empty() || s->size() > 5 || s->find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  int v = std::stoi(*s);
  return v <= max ? std::optional<int>(v) : std::nullopt;
}

bool has_dscp_apps(const DcbState& d) {
  for (const auto& a : d.apps)
    if (a.selector == IEEE_8021QAZ_APP_SEL_DSCP) return true;
  return false;
}

}  // namespace

NcclTrafficPath nccl_traffic_path(const RoceQosFacts& f, const RoceQosPort& p) {
  NcclTrafficPath t;
  if (p.traffic_class) {
    t.traffic_class = *p.traffic_class;
    t.tc_source = "port traffic_class";
  } else if (auto tc = parse_small_int(f.nccl_ib_tc, 255)) {
    t.traffic_class = *tc;
    t.tc_source = "NCCL_IB_TC";
  } else {
    t.traffic_class = 0;
    t.tc_source =
        f.nccl_ib_tc ? "NCCL default (0; NCCL_IB_TC is not a number 0..255)" : "NCCL default (0)";
  }
  t.dscp = t.traffic_class >> 2;
  t.sl = parse_small_int(f.nccl_ib_sl, 15).value_or(0);

  if (p.trust_file == "dscp" || p.trust_file == "pcp") {
    t.trust = *p.trust_file;
    t.trust_source = "qos/trust";
  } else if (p.dcb.status == "ok") {
    // mlx5 switches to trust dscp when the first DSCP APP entry is added and back to pcp when the
    // last is deleted (en_dcbnl.c), so the APP table is the trust state `dcb app` shows.
    t.trust = has_dscp_apps(p.dcb) ? "dscp" : "pcp";
    t.trust_source = has_dscp_apps(p.dcb) ? "DSCP APP entries" : "no DSCP APP entries";
  } else {
    t.trust = "unknown";
    t.trust_source = "DCB " + p.dcb.status;
  }

  if (t.trust == "pcp") {
    t.priority = t.sl & 7;
    t.priority_source = "SL " + std::to_string(t.sl) + " -> PCP " + std::to_string(t.sl & 7);
  } else if (t.trust == "dscp" && p.dcb.status == "ok") {
    std::optional<int> default_prio;
    for (const auto& a : p.dcb.apps) {
      if (a.selector == IEEE_8021QAZ_APP_SEL_DSCP && a.protocol == t.dscp) t.priority = a.priority;
      if (a.selector == IEEE_8021QAZ_APP_SEL_ETHERTYPE && a.protocol == 0)
        default_prio = a.priority;
    }
    if (t.priority) {
      t.priority_source =
          "DSCP " + std::to_string(t.dscp) + " -> " + std::to_string(*t.priority) + " (APP table)";
    } else {
      t.priority = default_prio.value_or(0);
      t.priority_source = "DSCP " + std::to_string(t.dscp) +
                          " has no APP entry: default priority " + std::to_string(*t.priority);
    }
  } else {
    t.priority_source = "unknown (" + t.trust_source + ")";
  }
  return t;
}

int roce_mtu_for_netdev_mtu(int netdev_mtu, bool soft_roce) {
  constexpr int kRoceV2Overhead = 96;  // GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4
  // rxe sizes its own: drivers/infiniband/sw/rxe/rxe_param.h eth_mtu_int_to_enum subtracts
  // RXE_MAX_HDR_LENGTH (80), so a netdev MTU of 4176..4191 gives rxe 4096 where a NIC has 2048.
  constexpr int kRxeOverhead = 80;
  int room = netdev_mtu - (soft_roce ? kRxeOverhead : kRoceV2Overhead);
  for (int m : {4096, 2048, 1024, 512, 256})
    if (room >= m) return m;
  return 0;  // too small for any RoCE MTU
}

}  // namespace fabkit::probes
