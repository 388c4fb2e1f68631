#include "probes/roce_qos/roce_qos_facts.h"

namespace fabkit::probes {
namespace {

template <typename T>
Json or_null(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json enable_map(const std::map<int, bool>& m) {
  Json j = Json::object();
  for (const auto& [p, on] : m) j[std::to_string(p)] = on;
  return j;
}

Json dcb_json(const DcbState& d) {
  Json apps = Json::array();
  for (const auto& a : d.apps)
    apps.push_back({{"selector", a.selector}, {"protocol", a.protocol}, {"priority", a.priority}});
  Json enabled = nullptr;
  if (d.pfc_enabled) {
    enabled = Json::array();
    for (int p = 0; p < 8; ++p)
      if (*d.pfc_enabled >> p & 1) enabled.push_back(p);
  }
  return {{"status", d.status},
          {"detail", d.detail.empty() ? Json(nullptr) : Json(d.detail)},
          {"dcbx", or_null(d.dcbx)},
          {"pfc_source", d.pfc_source.empty() ? Json(nullptr) : Json(d.pfc_source)},
          {"pfc_enabled_priorities", enabled},
          {"pfc_cap", or_null(d.pfc_cap)},
          {"pfc_delay", or_null(d.pfc_delay)},
          {"pfc_requests", d.pfc_requests},
          {"pfc_indications", d.pfc_indications},
          {"prio_tc", d.prio_tc},
          {"tc_tx_bw", d.tc_tx_bw},
          {"tc_tsa", d.tc_tsa},
          {"app", apps}};
}

}  // namespace

Json to_json(const RoceQosFacts& f) {
  Json ports = Json::array();
  for (const auto& p : f.ports) {
    const NcclTrafficPath t = nccl_traffic_path(f, p);
    ports.push_back(
        {{"device", p.device},
         {"port", p.port},
         {"netdev", p.netdev},
         {"active", p.active},
         {"netdev_mtu", or_null(p.netdev_mtu)},
         {"active_mtu", or_null(p.active_mtu)},
         {"roce_mtu_allowed",
          p.netdev_mtu ? Json(roce_mtu_for_netdev_mtu(*p.netdev_mtu, p.soft_roce)) : Json(nullptr)},
         {"trust_file", or_null(p.trust_file)},
         {"traffic_class_file", or_null(p.traffic_class_text)},
         {"traffic_class", or_null(p.traffic_class)},
         {"ecn_np_enabled", enable_map(p.ecn_np)},
         {"ecn_rp_enabled", enable_map(p.ecn_rp)},
         {"dcqcn_np", p.dcqcn_np},
         {"dcqcn_rp", p.dcqcn_rp},
         {"dcb", dcb_json(p.dcb)},
         {"ethtool",
          {{"status", p.ethtool.status},
           {"detail", p.ethtool.detail.empty() ? Json(nullptr) : Json(p.ethtool.detail)},
           {"stats_total", p.ethtool.stats_total},
           {"counters", p.ethtool.values},
           {"deltas", p.ethtool.deltas}}},
         {"nccl_path",
          {{"traffic_class", t.traffic_class},
           {"tc_source", t.tc_source},
           {"dscp", t.dscp},
           {"trust", t.trust},
           {"trust_source", t.trust_source},
           {"sl", t.sl},
           {"priority", or_null(t.priority)},
           {"priority_source", t.priority_source}}}});
  }
  Json errors = Json::array();
  for (const auto& e : f.errors)
    errors.push_back(
        {{"call", e.call}, {"errno", e.err}, {"object", e.object}, {"message", e.to_string()}});
  return {{"source", f.source},
          {"replay_file", f.replay_file.empty() ? Json(nullptr) : Json(f.replay_file)},
          {"counter_interval_ms", f.counter_interval_ms},
          {"nccl_ib_tc", or_null(f.nccl_ib_tc)},
          {"nccl_ib_tc_source",
           f.nccl_ib_tc_source.empty() ? Json(nullptr) : Json(f.nccl_ib_tc_source)},
          {"nccl_ib_sl", or_null(f.nccl_ib_sl)},
          {"nccl_ib_sl_source",
           f.nccl_ib_sl_source.empty() ? Json(nullptr) : Json(f.nccl_ib_sl_source)},
          {"ports", ports},
          {"errors", errors}};
}

}  // namespace fabkit::probes
