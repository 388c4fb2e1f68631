#include "fabric/pair/transport_plan.h"

namespace fabkit::pair {

bool is_rdma_transport(const std::string& name) {
  return name.find("ibverbs") != std::string::npos || name.find("rdma") != std::string::npos ||
         name == "nccl-ib" || name == "nccl-roce";
}

Json first_active_rdma_port(const Json& report) {
  if (!report.is_object() || !report.contains("rdma") || !report["rdma"].is_object()) return nullptr;
  for (const auto& d : report["rdma"].value("devices", Json::array())) {
    if (!d.is_object()) continue;
    for (const auto& p : d.value("ports", Json::array())) {
      if (!p.is_object() || p.value("state", "") != "ACTIVE") continue;
      std::string ll = p.value("link_layer", "");
      Json gid = p.contains("roce_v2_gid_index") ? p["roce_v2_gid_index"] : Json();
      return {{"hca", d.value("name", "")}, {"ib_port", p.value("port", 1)},
              // InfiniBand addresses by LID: no GID index needed (-1 = the runner's default).
              {"gid_index", ll == "Ethernet" && gid.is_number_integer() ? gid : Json(-1)},
              {"link_layer", ll}, {"rate_gbps", p.contains("rate_gbps") ? p["rate_gbps"] : Json()}};
    }
  }
  return nullptr;
}

TransportPlan plan_transport(const std::string& name, const AgentFacts& a, const AgentFacts& b) {
  TransportPlan plan;
  if (!is_rdma_transport(name)) return plan;
  Json pa = first_active_rdma_port(a.report), pb = first_active_rdma_port(b.report);
  for (const auto* side : {&a, &b}) {
    const Json& p = side == &a ? pa : pb;
    if (p.is_null()) {
      plan.runnable = false;
      plan.reason = "no ACTIVE RDMA port on " + side->host + " (node report rdma section)";
      return plan;
    }
  }
  if (pa["link_layer"] != pb["link_layer"]) {
    plan.runnable = false;
    plan.reason = "link layers differ: " + pa["link_layer"].dump() + " on " + a.host + ", " +
                  pb["link_layer"].dump() + " on " + b.host;
    return plan;
  }
  // NCCL's IB and RoCE runs are separate configurations: each needs its own link layer.
  std::string want = name == "nccl-ib" ? "InfiniBand" : name == "nccl-roce" ? "Ethernet" : "";
  if (!want.empty() && pa["link_layer"] != want) {
    plan.runnable = false;
    plan.reason = name + " needs a " + want + " port; the ACTIVE ports are " + pa["link_layer"].dump();
    return plan;
  }
  if (pa["link_layer"] == "Ethernet" && (pa["gid_index"] == -1 || pb["gid_index"] == -1)) {
    plan.runnable = false;
    plan.reason = "RoCE port without a RoCE v2 GID on " + (pa["gid_index"] == -1 ? a.host : b.host);
    return plan;
  }
  plan.extra_a = pa;
  plan.extra_b = pb;
  return plan;
}

}  // namespace fabkit::pair
