#include "fabric/pair/transport_plan.h"

#include <optional>
#include <vector>

#include "fabric/pair/rdma_rails.h"
#include "probes/net/nccl_list.h"

namespace fabkit::pair {

bool is_rdma_transport(const std::string& name) {
  return name.find("ibverbs") != std::string::npos || name.find("rdma") != std::string::npos ||
         name == "nccl-ib" || name == "nccl-roce";
}

namespace {

// NCCL_IB_HCA as this host's node report recorded it (nccl_env section), or nullopt when unset.
std::optional<probes::NcclList> ib_hca_of(const Json& report) {
  const std::optional<std::string> value = nccl_env_value(report, "NCCL_IB_HCA");
  if (!value) return std::nullopt;
  return probes::parse_nccl_list(*value, probes::kNcclMaxHcaEntries);
}

Json side(const RcPortPair& p, bool a) {
  return {{"hca", a ? p.hca_a : p.hca_b}, {"ib_port", a ? p.port_a : p.port_b},
          // InfiniBand addresses by LID: no GID index needed (-1 = the runner's default).
          {"gid_index", a ? p.gid_index_a : p.gid_index_b}, {"link_layer", p.link_layer},
          {"rate_gbps", p.rate_gbps ? Json(*p.rate_gbps) : Json()}};
}

}  // namespace

TransportPlan plan_transport(const std::string& name, const AgentFacts& a, const AgentFacts& b) {
  TransportPlan plan;
  if (!is_rdma_transport(name)) return plan;
  // The ports the job would use: a same-rail pair (rdma_rails.h), of the link layer this
  // transport needs, on ports NCCL_IB_HCA selects where a host sets it; not just the first
  // ACTIVE port of each host, which on a rail-optimised fabric may sit on different rails.
  std::string want = name == "nccl-ib" ? "InfiniBand" : name == "nccl-roce" ? "Ethernet" : "";
  const auto hca_a = ib_hca_of(a.report), hca_b = ib_hca_of(b.report);
  for (const auto* h : {&a, &b})
    if (active_link_layers(h->report).empty()) {
      plan.runnable = false;
      plan.reason = "no ACTIVE RDMA port on " + h->host + " (node report rdma section)";
      return plan;
    }
  const RailPlan rails = plan_rails(a.report, b.report);
  std::string why_not;
  if (rails.pairs.empty())
    why_not = "link layers differ: " + Json(active_link_layers(a.report)).dump() + " on " + a.host + ", " +
              Json(active_link_layers(b.report)).dump() + " on " + b.host;
  const RcPortPair* chosen = nullptr;
  for (const auto& p : rails.pairs) {
    if (!want.empty() && p.link_layer != want) {
      why_not = name + " needs a " + want + " port; the ACTIVE port pairs are " + p.link_layer;
      continue;
    }
    if ((hca_a && !probes::nccl_list_selects(*hca_a, p.hca_a, p.port_a)) ||
        (hca_b && !probes::nccl_list_selects(*hca_b, p.hca_b, p.port_b))) {
      why_not = "no same-rail port pair is selected by NCCL_IB_HCA (" + (hca_a ? hca_a->text : std::string("unset")) +
                " on " + a.host + ", " + (hca_b ? hca_b->text : std::string("unset")) + " on " + b.host + ")";
      continue;
    }
    if (p.link_layer == "Ethernet" && (p.gid_index_a == -1 || p.gid_index_b == -1)) {
      why_not = "RoCE port without a RoCE v2 GID on " + (p.gid_index_a == -1 ? a.host : b.host);
      continue;
    }
    chosen = &p;
    break;
  }
  if (!chosen) {
    plan.runnable = false;
    plan.reason = why_not;
    return plan;
  }
  Json pa = side(*chosen, true), pb = side(*chosen, false);
  plan.extra_a = pa;
  plan.extra_b = pb;
  return plan;
}

}  // namespace fabkit::pair
