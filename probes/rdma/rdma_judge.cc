// Findings for RDMA devices. A port's link is "expected" unless another port of the same HCA is
// up: dual-port cards often have one cable, and NCCL then uses the active port only.
#include <map>
#include <set>

#include "probes/rdma/rdma_facts.h"
#include "verbs/verbs_strings.h"

namespace fabkit::probes {
namespace {

using verbs::LinkLayer;
using verbs::PhysState;
using verbs::PortState;

std::string subject(const RdmaDevice& d, const RdmaPort& p) {
  return d.name + ":" + std::to_string(p.port);
}

template <typename E>
std::string show(const std::optional<E>& e) {
  return e ? verbs::describe(*e) : "unknown";
}

std::string fmt_rate(double g) {
  char buf[32];
  snprintf(buf, sizeof buf, g == static_cast<long>(g) ? "%.0f" : "%.1f", g);
  return buf;
}

std::string join(const std::set<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

bool is_ib(const RdmaPort& p) { return p.link_layer == LinkLayer::kInfiniBand; }
bool is_eth(const RdmaPort& p) { return p.link_layer == LinkLayer::kEthernet; }
bool is_active(const RdmaPort& p) { return p.state == PortState::kActive; }

Finding port_not_active(const RdmaDevice& d, const RdmaPort& p) {
  std::string seen = subject(d, p) + " is " + show(p.state) + " with physical state " +
                     show(p.phys_state) + "; expected ACTIVE / LinkUp";
  std::string nd = p.netdev ? *p.netdev : "<netdev>";
  if (p.phys_state == PhysState::kPolling)
    return fail("rdma.port_polling", subject(d, p),
                seen + ": the port sees no link partner (no cable, a bad cable or transceiver, or "
                       "the switch port is down)",
                "check the cable and the switch port; then 'ibstat " + d.name + " " +
                    std::to_string(p.port) + "' shows 'Physical state: LinkUp'" +
                    (is_eth(p) ? "; for RoCE also 'ip link set dev " + nd + " up'" : ""));
  if (p.phys_state == PhysState::kDisabled)
    return fail("rdma.port_disabled", subject(d, p), seen + ": the port is administratively disabled",
                is_eth(p) ? "ip link set dev " + nd + " up"
                          : "ibportstate -C " + d.name + " -P " + std::to_string(p.port) +
                                " <lid> " + std::to_string(p.port) + " enable (or enable it on the "
                                                                     "switch side)");
  if (is_ib(p) && p.phys_state == PhysState::kLinkUp &&
      (p.state == PortState::kInit || p.state == PortState::kArmed))
    return fail("rdma.port_not_active", subject(d, p),
                seen + ": the physical link is up but no subnet manager has activated the port",
                "run a subnet manager on the fabric: 'systemctl start opensm' on one node, or "
                "check the managed switch's SM");
  return fail("rdma.port_not_active", subject(d, p), seen,
              "check 'ibstat " + d.name + " " + std::to_string(p.port) + "' and the driver log "
              "('dmesg | grep -i mlx'); a link that is physically up but DOWN needs the link "
              "partner checked");
}

void judge_port(const RdmaDevice& d, const RdmaPort& p, int active_port,
                std::vector<Finding>& out) {
  if (!is_active(p)) {
    if (active_port > 0)
      out.push_back(info("rdma.port_unused", subject(d, p),
                         subject(d, p) + " is " + show(p.state) + " (" + show(p.phys_state) +
                             ") while another port of " + d.name +
                             " is ACTIVE: treated as an uncabled second port",
                         "if this port should carry traffic, check its cable; keep it out of "
                         "NCCL_IB_HCA (e.g. NCCL_IB_HCA==" + d.name + ":" +
                             std::to_string(active_port) + ")"));
    else
      out.push_back(port_not_active(d, p));
  }
  if (is_ib(p) && p.lid && *p.lid == 0 && p.phys_state == PhysState::kLinkUp)
    out.push_back(fail("rdma.lid_zero", subject(d, p),
                       subject(d, p) + " is InfiniBand with LID 0: no subnet manager has "
                                       "assigned it an address, so no connection can be made",
                       "start a subnet manager: 'systemctl start opensm' (or check the switch's "
                       "SM); 'sminfo' must answer"));
  if (is_ib(p) && is_active(p) && p.lid && *p.lid != 0 && p.sm_lid && *p.sm_lid == 0)
    out.push_back(warn("rdma.sm_lid_zero", subject(d, p),
                       subject(d, p) + " has LID " + std::to_string(*p.lid) +
                           " but SM LID 0: the subnet manager that configured it is gone",
                       "check the subnet manager: 'sminfo'; restart it with 'systemctl restart "
                       "opensm' or on the switch"));
  if (!is_eth(p) || !is_active(p)) return;
  if (!p.netdev)
    out.push_back(fail("rdma.roce_no_netdev", subject(d, p),
                       subject(d, p) + " is RoCE but has no net device: RoCE addresses (GIDs) "
                                       "come from the netdev's IP addresses",
                       "load the Ethernet driver for the port ('modprobe mlx5_core') and check "
                       "'rdma link show " + d.name + "/" + std::to_string(p.port) + "'"));
  if (p.gids_known && !p.roce_v2_gid_index)
    out.push_back(fail("rdma.roce_no_v2_gid", subject(d, p),
                       subject(d, p) + " is RoCE with no RoCE v2 GID (" +
                           std::to_string(p.gids.size()) +
                           " GIDs in use); NCCL and routed RoCE fabrics need RoCE v2",
                       "assign an IP address to " + (p.netdev ? *p.netdev : std::string("the netdev")) +
                           " ('ip addr add <addr>/<len> dev " +
                           (p.netdev ? *p.netdev : std::string("<netdev>")) +
                           "'); check the default mode with 'cma_roce_mode -d " + d.name + " -p " +
                           std::to_string(p.port) + "' (set '-m 2' for RoCE v2)"));
}

}  // namespace

std::vector<Finding> judge_rdma(const RdmaFacts& f) {
  std::vector<Finding> out;
  for (const auto& e : f.errors)
    out.push_back(warn("rdma.gather_error", e.object, "could not read RDMA facts: " + e.to_string(),
                       "run fabcheck as a user that can read /sys/class/infiniband and open "
                       "/dev/infiniband/uverbs*; check the RDMA driver ('rdma link show')"));
  if (f.devices.empty()) {
    out.push_back(info("rdma.no_devices", "node",
                       "no RDMA devices (source: " + f.source + "); NCCL will use TCP sockets "
                       "between nodes here",
                       "on a GPU node that should have InfiniBand/RoCE: load the driver "
                       "('modprobe mlx5_ib') and check 'ibv_devices'"));
    return out;
  }
  std::set<LinkLayer> layers;
  std::set<std::string> ib_hcas;  // for the fix: the HCAs to pin NCCL to
  std::map<double, std::vector<std::string>> rates;
  for (const auto& d : f.devices) {
    int active_port = 0;  // an ACTIVE port of this HCA, if any
    for (const auto& p : d.ports)
      if (is_active(p) && !active_port) active_port = p.port;
    for (const auto& p : d.ports) {
      judge_port(d, p, active_port, out);
      if (!is_active(p)) continue;
      if (p.link_layer) layers.insert(*p.link_layer);
      if (is_ib(p)) ib_hcas.insert(d.name);
      if (p.rate_gbps) rates[*p.rate_gbps].push_back(subject(d, p));
    }
  }
  if (layers.size() > 1)
    out.push_back(warn("rdma.mixed_link_layers", "node",
                       "active ports use both InfiniBand and Ethernet (RoCE); NCCL picks one "
                       "kind per job and a node pair with different kinds cannot talk over RDMA",
                       "select one kind explicitly: NCCL_IB_HCA==" + join(ib_hcas) +
                           " for the InfiniBand HCAs"));
  if (rates.size() > 1) {
    std::string seen;
    for (const auto& [g, ports] : rates) {
      seen += (seen.empty() ? "" : "; ") + fmt_rate(g) + " Gb/s:";
      for (const auto& s : ports) seen += " " + s;
    }
    out.push_back(warn("rdma.mixed_rates", "node",
                       "active ports run at different rates (" + seen +
                           "); collectives run at the slowest rail's speed",
                       "check the slower ports' cables and switch ports ('ibstat', 'mlxlink -d "
                       "<dev>'); a 4X port at 1X width or a lower speed points at a bad cable"));
  }
  return out;
}

}  // namespace fabkit::probes
