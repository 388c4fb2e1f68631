// Findings for RoCE lossless QoS (docs/findings/roce_qos.md has the sources). Every finding names
// the setting, the value seen and needed, the host command that fixes it on common NICs, and that
// the switch ports must match: a host cannot see the switch side.
#include <cstdio>

#include "probes/roce_qos/roce_qos_facts.h"

namespace fabkit::probes {
namespace {

constexpr const char* kSwitchToo =
    "; the switch ports must use the same priority, PFC and ECN settings (a host cannot see them)";

std::string subject(const RoceQosPort& p) {
  return p.device + ":" + std::to_string(p.port) + " (" + p.netdev + ")";
}

// IEEE 802.1p has priorities 0..7, one PFC enable bit each. A priority outside them comes from a
// driver's or replay file's APP entry (a byte on the wire): shifting a mask by it is undefined.
constexpr int kPriorities = 8;

bool valid_priority(int prio) { return prio >= 0 && prio < kPriorities; }
bool pfc_on(int mask, int prio) { return valid_priority(prio) && (mask >> prio & 1); }

std::string priorities(int mask) {
  std::string s;
  for (int i = 0; i < kPriorities; ++i)
    if (pfc_on(mask, i)) s += (s.empty() ? "" : ",") + std::to_string(i);
  return s.empty() ? "none" : s;
}

// The flags mlnx_qos --pfc takes, with `prio` (a valid priority) added to `mask`.
std::string pfc_flags(int mask, int prio) {
  std::string s;
  for (int i = 0; i < kPriorities; ++i)
    s += (i ? "," : "") + std::string(pfc_on(mask, i) || i == prio ? "1" : "0");
  return s;
}

std::string describe_path(const NcclTrafficPath& t) {
  return "traffic class " + std::to_string(t.traffic_class) + " (" + t.tc_source + ", DSCP " +
         std::to_string(t.dscp) + "), trust " + t.trust + " (" + t.trust_source + ")" +
         (t.priority ? ", priority " + std::to_string(*t.priority) + " (" + t.priority_source + ")"
                     : "");
}

// A DSCP whose APP entry maps to a PFC-enabled priority: 26 when it does (NVIDIA's RoCE guides use
// DSCP 26, traffic class 106 with ECT), else the lowest DSCP of the lowest lossless priority above
// 0 (priority 0 carries the untagged default traffic), else of priority 0; nullopt when none does.
std::optional<int> lossless_dscp(const DcbState& d, int mask) {
  std::optional<std::pair<int, int>> best;  // (priority rank, dscp)
  for (const auto& a : d.apps) {
    if (a.selector != 5 || !pfc_on(mask, a.priority)) continue;
    if (a.protocol == 26) return 26;
    std::pair<int, int> key{a.priority == 0 ? 8 : a.priority, a.protocol};
    if (!best || key < *best) best = key;
  }
  if (!best) return std::nullopt;
  return best->second;
}

uint64_t delta(const RoceQosPort& p, const std::string& name) {
  auto it = p.ethtool.deltas.find(name);
  return it == p.ethtool.deltas.end() ? 0 : it->second;
}

void judge_pfc(const RoceQosPort& p, const NcclTrafficPath& t, std::vector<Finding>& out) {
  if (p.dcb.status != "ok" || !p.dcb.pfc_enabled || !t.priority) return;
  const int mask = *p.dcb.pfc_enabled;
  const int prio = *t.priority;
  if (pfc_on(mask, prio)) return;
  const std::string s = subject(p);
  if (!valid_priority(prio)) {
    out.push_back(warn(
        "roce_qos.nccl_priority_lossy", s,
        s + ": NCCL's RoCE traffic (" + describe_path(t) + ") lands on priority " +
            std::to_string(prio) +
            ", which is not an 802.1p priority (0..7): no PFC setting covers it, so the traffic "
            "is lossy; PFC is on priorities " +
            priorities(mask),
        "map DSCP " + std::to_string(t.dscp) + " to a priority with PFC on: dcb app replace dev " +
            p.netdev + " dscp-prio " + std::to_string(t.dscp) + ":<priority 0..7>" + kSwitchToo));
    return;
  }
  if (mask == 0) {
    out.push_back(warn(
        "roce_qos.pfc_disabled", s,
        s + ": PFC is enabled on no priority (" + p.dcb.pfc_source +
            " PFC), so NCCL's RoCE traffic (" + describe_path(t) +
            ") is lossy: under congestion packets drop, RDMA retransmits, and "
            "NCCL's bandwidth collapses or the job hangs; needed: PFC on priority " +
            std::to_string(prio) + " (unless the fabric is deliberately lossy with ECN)",
        "mlnx_qos -i " + p.netdev + " --pfc " + pfc_flags(mask, prio) + "  (or: dcb pfc set dev " +
            p.netdev + " prio-pfc " + std::to_string(prio) + ":on; Intel: lldptool -T -i " +
            p.netdev + " -V PFC enabled=" + std::to_string(prio) + ")" + kSwitchToo));
    return;
  }
  auto dscp = lossless_dscp(p.dcb, mask);
  std::string tc_fix = dscp ? "set NCCL_IB_TC=" + std::to_string(*dscp * 4 + 2) + " (DSCP " +
                                  std::to_string(*dscp) +
                                  ", a lossless priority, with ECN capable) or "
                            : "";
  out.push_back(warn("roce_qos.nccl_priority_lossy", s,
                     s + ": NCCL's RoCE traffic (" + describe_path(t) + ") lands on priority " +
                         std::to_string(prio) + ", which has no PFC; PFC is on priorities " +
                         priorities(mask) +
                         ": the lossless class is configured but NCCL does not use it",
                     tc_fix + "enable PFC on priority " + std::to_string(prio) + ": mlnx_qos -i " +
                         p.netdev + " --pfc " + pfc_flags(mask, prio) + " (dcb pfc set dev " +
                         p.netdev + " prio-pfc " + std::to_string(prio) + ":on)" + kSwitchToo));
}

// Whether `enable` has all eight priorities and every one is 0: then ECN is off on NCCL's
// priority whichever it is, so an unknown trust mode (a --sysroot capture, a driver without DCB)
// does not leave it unjudged.
bool off_on_every_priority(const std::map<int, bool>& enable) {
  for (int i = 0; i < kPriorities; ++i) {
    auto it = enable.find(i);
    if (it == enable.end() || it->second) return false;
  }
  return true;
}

void judge_ecn_unknown_priority(const RoceQosPort& p, const NcclTrafficPath& t,
                                std::vector<Finding>& out) {
  const bool np_off = off_on_every_priority(p.ecn_np), rp_off = off_on_every_priority(p.ecn_rp);
  if (!np_off && !rp_off) return;
  std::string files, fix;
  for (auto [o, off] : {std::pair{"roce_np", np_off}, std::pair{"roce_rp", rp_off}}) {
    if (!off) continue;
    const std::string dir = "/sys/class/net/" + p.netdev + "/ecn/" + o + "/enable/";
    files += (files.empty() ? "" : ", ") + dir + "0..7 = 0";
    fix += (fix.empty() ? "" : "; ") + std::string("echo 1 > ") + dir + "P";
  }
  const std::string s = subject(p);
  out.push_back(
      warn("roce_qos.ecn_disabled", s,
           s + ": ECN/DCQCN is off on every priority (" + files +
               "; needed 1 on NCCL's), so it is off on whichever priority NCCL's RoCE traffic uses "
               "(not known here: " +
               t.priority_source + "): " + (np_off ? "CE-marked packets get no CNP back, " : "") +
               (rp_off ? "CNPs do not slow this sender, " : "") +
               "so congestion is left to PFC pauses (pause storms, head-of-line blocking)",
           fix + " for NCCL's priority P (the one its traffic class maps to: mlnx_qos -i " +
               p.netdev + " shows the trust mode and dscp2prio table)" + kSwitchToo +
               " (ECN marking on the lossless queue)"));
}

void judge_ecn(const RoceQosPort& p, const NcclTrafficPath& t, std::vector<Finding>& out) {
  if (!t.priority) {
    judge_ecn_unknown_priority(p, t, out);
    return;
  }
  const int prio = *t.priority;
  std::vector<std::string> off;
  auto np = p.ecn_np.find(prio);
  auto rp = p.ecn_rp.find(prio);
  if (np != p.ecn_np.end() && !np->second) off.push_back("roce_np");
  if (rp != p.ecn_rp.end() && !rp->second) off.push_back("roce_rp");
  if (off.empty()) return;
  std::string files, fix;
  for (const auto& o : off) {
    const std::string f =
        "/sys/class/net/" + p.netdev + "/ecn/" + o + "/enable/" + std::to_string(prio);
    files += (files.empty() ? "" : ", ") + f + " = 0";
    fix += (fix.empty() ? "" : "; ") + std::string("echo 1 > ") + f;
  }
  const std::string s = subject(p);
  out.push_back(
      warn("roce_qos.ecn_disabled", s,
           s + ": ECN/DCQCN is off for priority " + std::to_string(prio) + ", NCCL's (" + files +
               "; needed 1): " +
               (np != p.ecn_np.end() && !np->second ? "CE-marked packets get no CNP back, " : "") +
               (rp != p.ecn_rp.end() && !rp->second ? "CNPs do not slow this sender, " : "") +
               "so congestion is left to PFC pauses (pause storms, head-of-line blocking)",
           fix + kSwitchToo + " (ECN marking on the lossless queue)"));
}

void judge_trust(const RoceQosFacts& f, const RoceQosPort& p, const NcclTrafficPath& t,
                 std::vector<Finding>& out) {
  const std::string s = subject(p);
  if (t.trust == "pcp" && t.traffic_class != 0) {
    out.push_back(warn("roce_qos.trust_mismatch", s,
                       s + ": trust mode is pcp (" + t.trust_source +
                           ") but NCCL's traffic class is " + std::to_string(t.traffic_class) +
                           " (" + t.tc_source + ", DSCP " + std::to_string(t.dscp) +
                           "): the DSCP does not choose the priority; untagged "
                           "RoCE packets are classified on priority " +
                           std::to_string(t.sl & 7) + " (the SL/PCP), not the one DSCP " +
                           std::to_string(t.dscp) + " is meant for",
                       "mlnx_qos -i " + p.netdev + " --trust dscp (or: dcb app add dev " +
                           p.netdev + " dscp-prio " + std::to_string(t.dscp) +
                           ":<lossless priority>)" + kSwitchToo +
                           " (switches classify by DSCP too)"));
  } else if (t.trust == "dscp" && f.nccl_ib_sl && t.sl != 0) {
    out.push_back(
        warn("roce_qos.trust_mismatch", s,
             s + ": NCCL_IB_SL=" + *f.nccl_ib_sl + " (" + f.nccl_ib_sl_source + ") asks for PCP " +
                 std::to_string(t.sl & 7) + ", but trust mode is dscp (" + t.trust_source +
                 "): the SL does not choose the priority, DSCP " + std::to_string(t.dscp) +
                 " does (priority " +
                 (t.priority ? std::to_string(*t.priority) : std::string("unknown")) + ")",
             "express the class as DSCP: unset NCCL_IB_SL and set NCCL_IB_TC=<DSCP*4+2>; or "
             "classify by PCP: mlnx_qos -i " +
                 p.netdev + " --trust pcp" + kSwitchToo));
  }
}

void judge_mtu(const RoceQosPort& p, std::vector<Finding>& out) {
  if (!p.netdev_mtu) return;
  const int allowed = roce_mtu_for_netdev_mtu(*p.netdev_mtu, p.soft_roce);
  const std::string s = subject(p);
  if (p.active_mtu && *p.active_mtu != allowed) {
    out.push_back(
        warn("roce_qos.mtu_mismatch", s,
             s + ": the RDMA port's active MTU is " + std::to_string(*p.active_mtu) +
                 " but netdev " + p.netdev + " has MTU " + std::to_string(*p.netdev_mtu) +
                 ", which allows RoCE MTU " + std::to_string(allowed) +
                 " (netdev MTU minus 96 bytes of RoCE v2 headers, rounded down to an IB MTU)",
             "set the MTU once, on the netdev (ip link set dev " + p.netdev +
                 " mtu 9000), then restart the job; every switch port on the path needs the same "
                 "or a larger MTU"));
  } else if (allowed < 4096) {
    out.push_back(
        warn("roce_qos.mtu_small", s,
             s + ": netdev " + p.netdev + " has MTU " + std::to_string(*p.netdev_mtu) +
                 ", so RoCE packets carry at most " + std::to_string(allowed) +
                 " bytes (needed: netdev MTU >= 4192 for RoCE MTU 4096); more packets per "
                 "message cost NCCL bandwidth",
             "ip link set dev " + p.netdev +
                 " mtu 9000 (persist it in the network "
                 "configuration); every switch port and peer on the path needs the same MTU"));
  }
}

std::string listing(const std::vector<std::pair<std::string, uint64_t>>& v) {
  std::string s;
  for (const auto& [n, x] : v) s += (s.empty() ? "" : ", ") + n + " +" + std::to_string(x);
  return s;
}

void judge_counters(const RoceQosFacts& f, const RoceQosPort& p, const NcclTrafficPath& t,
                    std::vector<Finding>& out) {
  if (p.ethtool.status != "ok" || f.counter_interval_ms <= 0) return;
  const std::string s = subject(p);
  const std::string during = " during " + std::to_string(f.counter_interval_ms) + " ms";
  // mlx5's pause storm prevention (device stall watermarks, en_stats.c): the NIC stopped sending
  // pause frames because its receive path was stalled for too long.
  uint64_t storm_err = delta(p, "tx_pause_storm_error_events");
  uint64_t storm_warn = delta(p, "tx_pause_storm_warning_events");
  std::vector<std::pair<std::string, uint64_t>> paused;
  for (int prio = 0; prio < 8; ++prio)
    for (const char* dir : {"rx", "tx"}) {
      const std::string n = std::string(dir) + "_prio" + std::to_string(prio) + "_pause_duration";
      // Microseconds paused (the mlx5 counters documentation): half the interval or more.
      uint64_t us = delta(p, n);
      if (us * 2 >= static_cast<uint64_t>(f.counter_interval_ms) * 1000 && us > 0)
        paused.emplace_back(n, us);
    }
  if (storm_err || storm_warn || !paused.empty()) {
    std::string seen;
    if (storm_err) seen += "tx_pause_storm_error_events +" + std::to_string(storm_err);
    if (storm_warn)
      seen += std::string(seen.empty() ? "" : ", ") + "tx_pause_storm_warning_events +" +
              std::to_string(storm_warn);
    if (!paused.empty()) seen += std::string(seen.empty() ? "" : ", ") + listing(paused) + " us";
    auto make = storm_err ? fail : warn;
    out.push_back(
        make("roce_qos.pause_storm", s,
             s + ": pause storm" + during + ": " + seen +
                 "; a port paused most of the time stalls every flow behind it (PFC "
                 "head-of-line blocking) and can spread through the fabric; needed: no storm "
                 "events, pauses well under half the time",
             "find the stalled receiver (a host not draining its queues, a bad NIC or PCIe "
             "link) with ethtool -S " +
                 p.netdev +
                 " on both ends; enable ECN/DCQCN on the "
                 "lossless priority so senders slow down before PFC pauses; check the switch's "
                 "PFC watchdog" +
                 std::string(kSwitchToo)));
  }
  std::vector<std::pair<std::string, uint64_t>> discards;
  std::vector<std::string> names = {"rx_discards_phy", "tx_discards_phy", "rx_out_of_buffer"};
  if (t.priority) {
    names.push_back("rx_prio" + std::to_string(*t.priority) + "_discards");
    names.push_back("rx_prio" + std::to_string(*t.priority) + "_buf_discard");
  }
  for (const auto& n : names)
    if (uint64_t d = delta(p, n)) discards.emplace_back(n, d);
  if (!discards.empty())
    out.push_back(
        warn("roce_qos.discards_rising", s,
             s + ": packets dropped" + during + ": " + listing(discards) +
                 " (rx_discards_phy / rx_prioN_discards: no receive buffer on the port, so "
                 "the lossless class is not lossless; rx_out_of_buffer: the host did not post "
                 "receive buffers fast enough); needed: no rise on a lossless RoCE port",
             "check that PFC is on NCCL's priority on this NIC and on the switch port "
             "(mlnx_qos -i " +
                 p.netdev +
                 "), the receive buffer sizes (mlnx_qos --buffer_size), "
                 "and the PCIe link of the NIC (fabcheck node's pcie section)" +
                 std::string(kSwitchToo)));
}

}  // namespace

std::vector<Finding> judge_roce_qos(const RoceQosFacts& f) {
  std::vector<Finding> out;
  for (const auto& p : f.ports) {
    const NcclTrafficPath t = nccl_traffic_path(f, p);
    const std::string s = subject(p);
    if (p.dcb.status == "not_supported" || p.dcb.status == "no_device" || p.dcb.status == "error")
      out.push_back(info("roce_qos.dcb_unavailable", s,
                         s + ": DCB state not readable (" + p.dcb.status + ": " + p.dcb.detail +
                             (p.soft_roce
                                  ? "); a soft-RoCE device (rxe) sends through its netdev's "
                                    "ordinary queues: it has no PFC, ETS or trust mode to check"
                                  : "); PFC and trust cannot be checked from this host (a VF or "
                                    "container sees no DCB: check on the host or hypervisor that "
                                    "owns the port)")));
    judge_pfc(p, t, out);
    judge_ecn(p, t, out);
    judge_trust(f, p, t, out);
    judge_mtu(p, out);
    judge_counters(f, p, t, out);
    // The summary a reader checks the switch against.
    std::string pfc = p.dcb.pfc_enabled ? priorities(*p.dcb.pfc_enabled) : "unknown";
    auto ecn = [&](const std::map<int, bool>& m) {
      if (!t.priority)
        return std::string(off_on_every_priority(m) ? "off (on every priority)" : "unknown");
      auto it = m.find(*t.priority);
      return it == m.end() ? std::string("not exposed") : std::string(it->second ? "on" : "off");
    };
    out.push_back(info("roce_qos.nccl_path", s,
                       s + ": NCCL's RoCE traffic: " + describe_path(t) + "; PFC on priorities " +
                           pfc + "; ECN np/rp on its priority: " + ecn(p.ecn_np) + "/" +
                           ecn(p.ecn_rp) +
                           "; the switch ports must classify and pause the same way"));
  }
  return out;
}

}  // namespace fabkit::probes
