#include "probes/rdma/rdma_facts.h"
#include "verbs/verbs_strings.h"

namespace fabkit::probes {
namespace {

template <typename T>
Json or_null(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

template <typename E>
Json name_or_null(const std::optional<E>& e) {
  return e ? Json(verbs::to_string(*e)) : Json(nullptr);
}

template <typename E>
Json code_or_null(const std::optional<E>& e) {
  return e ? Json(static_cast<int>(*e)) : Json(nullptr);
}

Json port_json(const RdmaPort& p) {
  Json gids = Json::array();
  for (const auto& g : p.gids)
    gids.push_back({{"index", g.index},
                    {"gid", g.gid},
                    {"type", name_or_null(g.type)},
                    {"netdev", g.netdev.empty() ? Json(nullptr) : Json(g.netdev)}});
  return {{"port", p.port},
          {"state", name_or_null(p.state)},
          {"state_code", code_or_null(p.state)},
          {"phys_state", name_or_null(p.phys_state)},
          {"phys_state_code", code_or_null(p.phys_state)},
          {"link_layer", p.link_layer ? Json(link_layer_name(*p.link_layer)) : Json(nullptr)},
          {"rate_gbps", or_null(p.rate_gbps)},
          {"rate", p.rate_text.empty() ? Json(nullptr) : Json(p.rate_text)},
          {"active_mtu", or_null(p.active_mtu)},
          {"max_mtu", or_null(p.max_mtu)},
          {"lid", or_null(p.lid)},
          {"sm_lid", or_null(p.sm_lid)},
          {"netdev", or_null(p.netdev)},
          {"netdev_place", to_string(p.netdev_place)},
          {"gids_known", p.gids_known},
          {"gids", gids},
          {"roce_v2_gid_index", or_null(p.roce_v2_gid_index)},
          {"counter_dirs", p.counter_dirs},
          {"counters", p.counters},
          {"counter_deltas", p.counter_deltas}};
}

}  // namespace

Json to_json(const RdmaFacts& f) {
  Json devices = Json::array();
  for (const auto& d : f.devices) {
    Json ports = Json::array();
    for (const auto& p : d.ports) ports.push_back(port_json(p));
    devices.push_back({{"name", d.name},
                       {"node_guid", or_null(d.node_guid)},
                       {"fw_ver", or_null(d.fw_ver)},
                       {"parent", or_null(d.parent)},
                       {"driver", d.driver.empty() ? Json(nullptr) : Json(d.driver)},
                       {"counters", d.counters},
                       {"ports", ports}});
  }
  Json errors = Json::array();
  for (const auto& e : f.errors)
    errors.push_back({{"call", e.call}, {"errno", e.err}, {"object", e.object}, {"message", e.to_string()}});
  return {{"source", f.source}, {"counter_interval_ms", f.counter_interval_ms}, {"devices", devices},
          {"errors", errors}};
}

}  // namespace fabkit::probes
