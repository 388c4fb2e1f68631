// Prometheus families of a node report's `roce_qos` section: per RoCE port the priority NCCL's
// traffic lands on, whether PFC and ECN are on for it, and the loss/congestion counters' values.
#include <stdexcept>

#include "reports/prom/prom_fields.h"

namespace fabkit::reports::prom {

std::vector<Family> roce_qos_families(const Json& r) {
  Family prio{
      "fabkit_node_roce_nccl_priority",
      "The 802.1p priority NCCL's RoCE traffic lands on (roce_qos.ports[].nccl_path.priority)",
      "gauge",
      {}};
  Family pfc{"fabkit_node_roce_pfc_on_nccl_priority",
             "1 when PFC is enabled on the priority NCCL's RoCE traffic lands on, else 0",
             "gauge",
             {}};
  Family ecn{"fabkit_node_roce_ecn_on_nccl_priority",
             "1 when ECN is enabled for NCCL's priority (point=np|rp), else 0; absent when the "
             "driver does not expose it",
             "gauge",
             {}};
  Family counters{"fabkit_node_roce_qos_counter_total",
                  "The NIC's loss and congestion counters (ethtool -S: pause, discard, drop, "
                  "out_of_buffer, ecn, cnp, storm) of each RoCE netdev",
                  "counter",
                  {}};
  const Json& ports = member(member(r, "roce_qos"), "ports");
  if (!ports.is_null() && !ports.is_array())
    throw std::invalid_argument("roce_qos.ports must be an array");
  for (size_t i = 0; ports.is_array() && i < ports.size(); ++i) {
    const Json& p = ports[i];
    const std::string w = "roce_qos.ports[" + std::to_string(i) + "]";
    const Labels l = {{"device", string_or(p, "device", "?")},
                      {"port", member(p, "port").is_number() ? member(p, "port").dump() : "?"},
                      {"netdev", string_or(p, "netdev", "?")}};
    auto pr = number(member(p, "nccl_path"), "priority", w + ".nccl_path");
    if (pr) prio.samples.push_back({l, *pr});
    const Json& enabled = member(member(p, "dcb"), "pfc_enabled_priorities");
    if (pr && enabled.is_array()) {
      bool on = false;
      for (const auto& x : enabled) on = on || (x.is_number() && x.get<double>() == *pr);
      pfc.samples.push_back({l, on ? 1.0 : 0.0});
    }
    for (const char* point : {"np", "rp"}) {
      if (!pr) break;
      const Json& v =
          member(member(p, point == std::string("np") ? "ecn_np_enabled" : "ecn_rp_enabled"),
                 std::to_string(static_cast<int>(*pr)).c_str());
      if (!v.is_boolean()) continue;
      Labels ls = l;
      ls.push_back({"point", point});
      ecn.samples.push_back({ls, v.get<bool>() ? 1.0 : 0.0});
    }
    const Json& c = member(member(p, "ethtool"), "counters");
    for (auto it = c.is_object() ? c.begin() : Json::const_iterator();
         c.is_object() && it != c.end(); ++it) {
      if (!it.value().is_number()) continue;
      Labels ls = l;
      ls.push_back({"counter", it.key()});
      counters.samples.push_back({ls, it.value().get<double>()});
    }
  }
  return {prio, pfc, ecn, counters};
}

}  // namespace fabkit::reports::prom
