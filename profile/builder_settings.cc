#include "profile/builder_settings.h"

#include <algorithm>

#include "profile/builder.h"
#include "profile/ib_qos_rules.h"
#include "profile/roce_qos_rules.h"

namespace fabkit::profile {
namespace {

// NCCL selects the RoCE GID itself from 2.21 on (docs/architecture.md, "Facts that shaped the
// code").
constexpr const char* kGidAutoVersion = "2.21";
// 4.096 us * 2^22 ~= 17 s per attempt: survives a subnet-manager re-sweep or a RoCE PFC storm
// that NCCL's default (20 since 2.14, ~4.3 s; 18 before) turns into "NET/IB: Got completion
// with error 12". 7 is the largest value of the 3-bit IB retry field (and NCCL's default; set
// so a site-wide nccl.conf cannot lower it unnoticed).
constexpr const char* kIbTimeout = "22";
constexpr const char* kIbRetryCnt = "7";
constexpr int kTorchDefaultPort = 29500;

Setting make(std::optional<std::string> value, Basis basis, std::string reason,
             std::vector<std::string> evidence) {
  Setting s;
  s.value = std::move(value);
  s.basis = basis;
  s.reason = std::move(reason);
  s.evidence = std::move(evidence);
  return s;
}

bool in_pair(const std::string& host, const std::vector<std::string>& hosts) {
  return std::find(hosts.begin(), hosts.end(), host) != hosts.end();
}

std::string join_ports(const std::vector<HcaPort>& ports) {
  std::string out;
  for (const auto& p : ports) out += (out.empty() ? "" : ",") + p.device + ":" + std::to_string(p.port);
  return out;
}

int level_rank(const std::string& l) {
  static const std::vector<std::string> kOrder = {"LOC", "NVL", "PIX", "PXB", "PXN", "PHB", "SYS"};
  auto it = std::find(kOrder.begin(), kOrder.end(), l);
  return it == kOrder.end() ? static_cast<int>(kOrder.size()) : static_cast<int>(it - kOrder.begin());
}

void gid_setting(const NodeFacts& n, const std::vector<HcaPort>& ports, const NcclInfo& nccl,
                 PerHost& out) {
  if (ports.empty() || ports.front().link_layer != "Ethernet") return;  // IB routes by LID
  std::string ver = nccl.version ? "NCCL " + *nccl.version + " (" + nccl.version_source + ")"
                                 : std::string("NCCL version unknown");
  if (nccl.version && version_less(*nccl.version, kGidAutoVersion) == false) {
    out[n.hostname] = make(std::nullopt, Basis::kInferred,
                           ver + " selects the RoCE v2 GID itself (>= 2.21); setting it would "
                                 "pin a GID that can move when addresses change",
                           {ver});
    return;
  }
  std::optional<int> gid;
  std::vector<std::string> ev = {ver};
  for (const auto& p : ports) {
    ev.push_back(n.hostname + " " + p.device + ":" + std::to_string(p.port) + " RoCE v2 GID index " +
                 (p.roce_v2_gid_index ? std::to_string(*p.roce_v2_gid_index) : "none"));
    if (!gid && p.roce_v2_gid_index) gid = p.roce_v2_gid_index;
  }
  if (!gid) {
    out[n.hostname] = make(std::nullopt, Basis::kInferred,
                           ver + " needs NCCL_IB_GID_INDEX for RoCE v2, but no port has a RoCE v2 "
                                 "GID (no IPv4/IPv6 address on the RoCE netdev?); NCCL will fall "
                                 "back to index 0 (RoCE v1)",
                           ev);
    return;
  }
  out[n.hostname] = make(std::to_string(*gid), Basis::kInferred,
                         ver + (nccl.version ? " is older than 2.21" : ", so set it") +
                             ": NCCL would use GID index 0 (RoCE v1 or link-local) without it",
                         ev);
}

// NCCL_IB_TC from what the RoCE ports are set up for (roce_qos_rules.h): one value per host, set
// only when every chosen port agrees on a lossless traffic class.
void tc_setting(const NodeFacts& n, const std::vector<HcaPort>& ports, PerHost& out) {
  if (ports.empty() || ports.front().link_layer != "Ethernet") return;
  std::optional<int> tc;
  bool agree = true, all_known = true;
  std::vector<std::string> ev;
  for (const auto& p : ports) {
    const std::string id = p.device + ":" + std::to_string(p.port);
    const Json* q = nullptr;
    for (const auto& j : n.roce_qos_ports)
      if (j.value("device", std::string()) == p.device && j.value("port", -1) == p.port) q = &j;
    if (!q) {
      ev.push_back(n.hostname + " " + id + ": no roce_qos entry in the report");
      all_known = false;
      continue;
    }
    RoceTcChoice c = lossless_traffic_class(*q);
    ev.push_back(n.hostname + " " + id + ": " + c.why);
    if (!c.traffic_class) {
      all_known = false;
      continue;
    }
    if (tc && *tc != *c.traffic_class) agree = false;
    tc = c.traffic_class;
  }
  if (tc && agree && all_known) {
    out[n.hostname] = make(std::to_string(*tc), Basis::kInferred,
                           "the traffic class that lands on a PFC-enabled priority on every chosen "
                           "RoCE port (the switches must treat that DSCP as lossless too)",
                           ev);
  } else if (!n.roce_qos_ports.empty()) {
    out[n.hostname] =
        make(std::nullopt, Basis::kInferred,
             agree ? "no lossless traffic class could be derived for every RoCE port; "
                     "NCCL's default traffic class 0 is used"
                   : "the RoCE ports disagree on the lossless traffic class",
             ev);
  }
}

// NCCL_IB_SL from the subnet manager's PathRecord (ib_qos_rules.h): NCCL never asks the SA, so
// without it the QPs carry SL 0 whatever QoS policy the SM set up. Set only when every chosen IB
// port's PathRecord gives the same SL and it is not 0: 0 is NCCL's default already, and leaving
// it unset keeps the profile free of a value that says nothing.
void sl_setting(const NodeFacts& n, const std::vector<HcaPort>& ports, PerHost& out) {
  if (ports.empty() || ports.front().link_layer != "InfiniBand") return;
  std::optional<int> sl;
  bool agree = true, all_known = true;
  std::vector<std::string> ev;
  for (const auto& p : ports) {
    const std::string id = p.device + ":" + std::to_string(p.port);
    const Json* q = nullptr;
    for (const auto& j : n.ib_qos_ports)
      if (j.value("device", std::string()) == p.device && j.value("port", -1) == p.port) q = &j;
    if (!q) {
      ev.push_back(n.hostname + " " + id + ": no ib_qos entry in the report");
      all_known = false;
      continue;
    }
    IbSlChoice c = path_record_sl(*q);
    ev.push_back(n.hostname + " " + id + ": " + c.why);
    if (!c.sl) {
      all_known = false;
      continue;
    }
    if (sl && *sl != *c.sl) agree = false;
    sl = c.sl;
  }
  if (sl && agree && all_known && *sl != 0) {
    out[n.hostname] = make(std::to_string(*sl), Basis::kInferred,
                           "the SL the subnet manager's PathRecord gives on every chosen IB port "
                           "(NCCL does not ask the SA and would use SL 0)",
                           ev);
  } else if (!agree) {
    out[n.hostname] = make(std::nullopt, Basis::kInferred,
                           "the IB ports' PathRecords disagree on the SL; NCCL's default SL 0 "
                           "is used",
                           ev);
  }
}

}  // namespace

TransportChoice choose_transport(const std::vector<NodeFacts>& nodes,
                                 const std::vector<PairVerdict>& pairs) {
  TransportChoice t;
  std::vector<std::string> without, ev;
  for (const auto& n : nodes) {
    if (!n.rdma_known)
      without.push_back(n.hostname + " (no rdma section in its report)");
    else if (n.active_ports.empty() && n.efa && n.efa->devices > 0)
      // NCCL_IB_DISABLE turns off NCCL's built-in verbs transport only; an external net plugin
      // (aws-ofi-nccl over libfabric's efa provider) is loaded and used regardless.
      without.push_back(n.hostname +
                        " (EFA only: NCCL's IB transport cannot use EFA devices; "
                        "the OFI net plugin carries NCCL's traffic there)");
    else if (n.active_ports.empty())
      without.push_back(n.hostname + " (no ACTIVE RDMA port)");
    for (const auto& e : n.port_evidence) ev.push_back(e);
  }
  for (const auto& p : pairs) {
    if (!p.transport) continue;
    ev.push_back(p.summary);
    bool rdma = *p.transport == "ib" || *p.transport == "roce";
    // One pair that measured sockets is enough to keep NCCL off RDMA for the whole job: every
    // rank must agree on the network or the communicator fails to connect.
    if (!t.measured_transport || !rdma) t.measured_transport = *p.transport;
    for (const auto& h : p.hosts) t.measured_hosts.push_back(h);
  }
  bool rdma_everywhere = without.empty() && !nodes.empty();
  if (t.measured_transport) {
    bool rdma = *t.measured_transport == "ib" || *t.measured_transport == "roce";
    t.rdma = rdma && rdma_everywhere;
    std::string reason = "pair measurement chose " + *t.measured_transport;
    if (rdma && !rdma_everywhere) {
      reason += ", but these hosts cannot use RDMA: ";
      for (const auto& w : without) reason += w + "; ";
    }
    t.ib_disable = make(t.rdma ? "0" : "1", Basis::kMeasured, reason, ev);
    return t;
  }
  t.rdma = rdma_everywhere;
  if (t.rdma) {
    t.ib_disable = make("0", Basis::kInferred,
                        "every host has ACTIVE RDMA ports; not measured end to end (run "
                        "`fabcheck pair` to confirm the fabric carries traffic)",
                        ev);
  } else {
    std::string reason = "NCCL must use sockets on every rank when one host has no RDMA: ";
    for (const auto& w : without) reason += w + "; ";
    t.ib_disable = make("1", Basis::kInferred, reason, ev);
  }
  return t;
}

std::vector<HcaPort> chosen_ports(const NodeFacts& n) {
  std::vector<HcaPort> ib, eth;
  for (const auto& p : n.active_ports) (p.link_layer == "InfiniBand" ? ib : eth).push_back(p);
  return ib.empty() ? eth : ib;
}

std::optional<std::string> chosen_interface(const NodeFacts& n,
                                            const std::vector<PairVerdict>& pairs, bool* measured) {
  *measured = false;
  for (const auto& p : pairs) {
    auto it = p.interfaces.find(n.hostname);
    if (it != p.interfaces.end()) {
      *measured = true;
      return it->second;
    }
  }
  return n.interface;
}

std::map<std::string, PerHost> choose_settings(const std::vector<NodeFacts>& nodes,
                                               const std::vector<PairVerdict>& pairs,
                                               const TransportChoice& t, const NcclInfo& nccl,
                                               std::optional<int> master_port) {
  std::map<std::string, PerHost> s;
  std::optional<int> measured_port;
  std::string port_ev;
  for (const auto& p : pairs)
    if (p.port && !measured_port) {
      measured_port = p.port;
      port_ev = p.summary + ", rendezvous port " + std::to_string(*p.port) + " reachable";
    }
  for (const auto& n : nodes) {
    const std::string& h = n.hostname;
    s["NCCL_IB_DISABLE"][h] = t.ib_disable;
    bool if_measured = false;
    if (auto ifname = chosen_interface(n, pairs, &if_measured)) {
      Basis b = if_measured ? Basis::kMeasured : Basis::kInferred;
      std::string why = if_measured ? "the interface the pair measurement ran over"
                                    : "the net probe's recommended interface for this host";
      std::vector<std::string> ev = {if_measured ? "pair measurement on " + h + ": " + *ifname
                                                 : n.interface_evidence};
      // '=' makes NCCL match the exact name: a bare "eno1" would also match "eno10".
      s["NCCL_SOCKET_IFNAME"][h] = make("=" + *ifname, b, why + "; '=' = exact name, not a prefix", ev);
      s["GLOO_SOCKET_IFNAME"][h] = make(*ifname, b, why, ev);
    }
    if (t.rdma) {
      auto ports = chosen_ports(n);
      bool measured = t.measured_transport && in_pair(h, t.measured_hosts);
      std::vector<std::string> ev = n.port_evidence;
      s["NCCL_IB_HCA"][h] = make("=" + join_ports(ports), measured ? Basis::kMeasured : Basis::kInferred,
                                 "the ACTIVE " + ports.front().link_layer +
                                     " ports, as an exact '=dev:port' list: a bare mlx5_1 would "
                                     "also match mlx5_10",
                                 ev);
      PerHost gid;
      gid_setting(n, ports, nccl, gid);
      for (auto& [host, g] : gid) s["NCCL_IB_GID_INDEX"][host] = g;
      PerHost tc;
      tc_setting(n, ports, tc);
      for (auto& [host, v] : tc) s["NCCL_IB_TC"][host] = v;
      PerHost sl;
      sl_setting(n, ports, sl);
      for (auto& [host, v] : sl) s["NCCL_IB_SL"][host] = v;
      s["NCCL_IB_TIMEOUT"][h] = make(kIbTimeout, Basis::kInferred,
                                     "4.096 us * 2^22 ~= 17 s per attempt: rides out fabric "
                                     "reconvergence that the default (2^20 ~= 4.3 s) aborts on",
                                     {});
      s["NCCL_IB_RETRY_CNT"][h] = make(kIbRetryCnt, Basis::kInferred,
                                       "the maximum of the 3-bit IB retry field, set explicitly "
                                       "so a site nccl.conf cannot lower it",
                                       {});
      if (!n.locality.empty()) {
        std::string worst = "PIX";
        std::vector<std::string> lev;
        for (const auto& g : n.locality) {
          std::string l = g.path_level.value_or("SYS");
          lev.push_back(h + " GPU " + g.gpu_bus_id + " -> " + g.nearest_nic.value_or("?") + ": " + l);
          if (level_rank(l) > level_rank(worst)) worst = l;
        }
        bool close = level_rank(worst) <= level_rank("PXB");
        s["NCCL_NET_GDR_LEVEL"][h] = make(
            close ? worst : "PXB", Basis::kInferred,
            close ? "every GPU reaches its nearest NIC within " + worst +
                        ": GPUDirect RDMA for all of them"
                  : "some GPUs reach their NIC only via " + worst +
                        " (across the CPU): GPUDirect there is slower than staging through host "
                        "memory, so allow it only up to PXB",
            lev);
      }
    }
    if (n.topo_file) {
      s["NCCL_TOPO_FILE"][h] = make(*n.topo_file, Basis::kInferred,
                                    "a topology file was present when the node was probed; NCCL "
                                    "needs it where the PCI tree is hidden (containers, VMs)",
                                    {h + " topo_file: " + *n.topo_file + " present"});
    }
    s["TORCH_NCCL_ASYNC_ERROR_HANDLING"][h] =
        make("1", Basis::kInferred,
             "a failed or timed-out collective aborts the process instead of hanging the job "
             "(torch < 2.2 reads NCCL_ASYNC_ERROR_HANDLING instead)",
             {});
    if (master_port) {
      s["MASTER_PORT"][h] = make(std::to_string(*master_port), Basis::kInferred,
                                 "given with --master-port; not tested for reachability", {});
    } else if (measured_port) {
      s["MASTER_PORT"][h] = make(std::to_string(*measured_port), Basis::kMeasured,
                                 "the pair measurement's rendezvous port was reachable", {port_ev});
    } else {
      s["MASTER_PORT"][h] = make(std::to_string(kTorchDefaultPort), Basis::kInferred,
                                 "torch's default rendezvous port; not tested for reachability "
                                 "(a firewall may block it: run `fabcheck pair`)",
                                 {});
    }
  }
  efa_settings(nodes, s);
  return s;
}

}  // namespace fabkit::profile
