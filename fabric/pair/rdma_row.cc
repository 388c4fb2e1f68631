#include "fabric/pair/rdma_row.h"

#include <algorithm>
#include <vector>

#include "fabric/pair/transport_plan.h"

namespace fabkit::pair {
namespace {

// The net device a node report gives one HCA port ("" when it names none).
std::string port_netdev(const Json& report, const std::string& hca, int port) {
  if (!report.is_object() || !report.contains("rdma") || !report["rdma"].is_object()) return "";
  for (const auto& d : report["rdma"].value("devices", Json::array())) {
    if (!d.is_object() || d.value("name", Json()) != hca) continue;
    for (const auto& p : d.value("ports", Json::array()))
      if (p.is_object() && p.value("port", Json()) == port && p.value("netdev", Json()).is_string())
        return p["netdev"].get<std::string>();
  }
  return "";
}

struct PortSide {
  std::string hca, netdev;
  int port = 1;
};

std::optional<std::pair<PortSide, PortSide>> rdma_ports(const PairFacts& f,
                                                        const std::string& transport) {
  const TransportPlan tp = plan_transport(transport, f.a, f.b);
  if (!tp.runnable) return std::nullopt;
  auto side = [](const Json& extra, const Json& report) {
    PortSide s;
    s.hca = extra.value("hca", std::string());
    s.port = extra.value("ib_port", 1);
    s.netdev = port_netdev(report, s.hca, s.port);
    return s;
  };
  return std::make_pair(side(tp.extra_a, f.a.report), side(tp.extra_b, f.b.report));
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool usable(const TransportResult& t) {
  if (t.status != "ok" || t.sizes.empty()) return false;
  for (const auto& s : t.sizes)
    if (!s.correct) return false;
  return true;
}

double peak_busbw(const TransportResult& t) {
  double peak = 0;
  for (const auto& s : t.sizes) peak = std::max(peak, s.busbw_gbps);
  return peak;
}

}  // namespace

std::string transport_via(const PairFacts& f, const std::string& transport,
                          std::optional<size_t> link) {
  if (!is_rdma_transport(transport)) {
    if (!link || *link >= f.links.size()) return "";
    return f.links[*link].a.ifname + " <-> " + f.links[*link].b.ifname;
  }
  const auto ports = rdma_ports(f, transport);
  if (!ports) return "";
  auto name = [](const PortSide& s) {
    return s.hca + ":" + std::to_string(s.port) + (s.netdev.empty() ? "" : " (" + s.netdev + ")");
  };
  const TransportPlan tp = plan_transport(transport, f.a, f.b);
  const std::string layer = tp.extra_a.value("link_layer", std::string());
  return name(ports->first) + " <-> " + name(ports->second) +
         (layer == "Ethernet" ? ", RoCE"
          : layer.empty()     ? ""
                              : ", " + layer);
}

RdmaRow choose_rdma_row(const PairFacts& f, std::optional<size_t> link) {
  RdmaRow row;
  const TransportResult* nccl = nullptr;
  const TransportResult* gloo = nullptr;
  std::vector<std::string> nccl_not_run, rdma_not_run;
  for (const auto& t : f.transports) {
    if (!is_rdma_transport(t.transport)) continue;
    const bool is_nccl = starts_with(t.transport, "nccl-");
    if (usable(t)) {
      if (is_nccl && (!nccl || peak_busbw(t) > peak_busbw(*nccl))) nccl = &t;
      if (t.transport == "gloo-ibverbs") gloo = &t;
      continue;
    }
    const std::string why = t.transport + " " +
                            (t.status == "ok" ? "gave a wrong result" : t.status) +
                            (t.reason.empty() ? "" : ": " + t.reason);
    rdma_not_run.push_back(why);
    if (is_nccl) nccl_not_run.push_back(why);
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : "; ") + x;
    return s;
  };
  if (nccl) {
    row.transport = nccl->transport;
    row.reason = nccl->transport + " on " + transport_via(f, nccl->transport, link) +
                 ": NCCL over RDMA, the all-reduce a GPU job runs";
    return row;
  }
  if (!gloo) {
    row.reason = rdma_not_run.empty() ? "no RDMA all-reduce transport was run"
                                      : "no RDMA all-reduce completed with correct results (" +
                                            join(rdma_not_run) + ")";
    return row;
  }
  row.transport = gloo->transport;
  row.reason = "gloo-ibverbs on " + transport_via(f, gloo->transport, link) +
               ": fabkit's ring over Gloo's ibverbs transport, the RDMA all-reduce that needs no "
               "GPU; NCCL's RDMA transports " +
               (nccl_not_run.empty() ? std::string("are not in the agents' fabcheck build")
                                     : "did not run (" + join(nccl_not_run) + ")");
  // Whether its port rides on the interfaces the socket rows used: only then do the rows compare
  // transports rather than links.
  const auto ports = rdma_ports(f, gloo->transport);
  if (ports && link && *link < f.links.size() && !ports->first.netdev.empty() &&
      !ports->second.netdev.empty()) {
    const auto& l = f.links[*link];
    const bool same = ports->first.netdev == l.a.ifname && ports->second.netdev == l.b.ifname;
    row.reason += same ? "; its ports run over the socket rows' interfaces (" + l.a.ifname + " / " +
                             l.b.ifname + "), so the rows compare transports on one link"
                       : "; its ports run over " + ports->first.netdev + " / " +
                             ports->second.netdev + ", not the socket rows' " + l.a.ifname + " / " +
                             l.b.ifname + ": the rows compare different links";
  }
  return row;
}

}  // namespace fabkit::pair
