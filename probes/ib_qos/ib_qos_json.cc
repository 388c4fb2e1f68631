#include "probes/ib_qos/ib_qos_facts.h"

namespace fabkit::probes {
namespace {

Json or_empty(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

Json path_json(const IbPathQuery& q) {
  Json rec = nullptr;
  if (q.record)
    rec = {{"sgid", q.record->sgid}, {"dgid", q.record->dgid}, {"slid", q.record->slid},
           {"dlid", q.record->dlid}, {"sl", q.record->sl},     {"qos_class", q.record->qos_class},
           {"mtu", q.record->mtu},   {"rate", q.record->rate}, {"pkey", q.record->pkey}};
  return {{"dgid", q.dgid}, {"status", q.status}, {"detail", or_empty(q.detail)}, {"record", rec}};
}

}  // namespace

Json to_json(const IbQosFacts& f) {
  const int sl = nccl_sl(f);
  Json ports = Json::array();
  for (const auto& p : f.ports) {
    Json pi = nullptr;
    if (p.port_info)
      pi = {{"lid", p.port_info->lid},
            {"sm_lid", p.port_info->sm_lid},
            {"sm_sl", p.port_info->sm_sl},
            {"port_state", p.port_info->port_state},
            {"vl_cap", vls_text(p.port_info->vl_cap)},
            {"oper_vls", vls_text(p.port_info->oper_vls)},
            {"data_vls", data_vl_count(p.port_info->oper_vls)}};
    Json paths = Json::array();
    for (const auto& q : p.paths) paths.push_back(path_json(q));
    Json sl2vl = nullptr, nccl_vl = nullptr;
    if (p.sl2vl) {
      sl2vl = Json(std::vector<int>(p.sl2vl->begin(), p.sl2vl->end()));
      nccl_vl = (*p.sl2vl)[sl];
    }
    ports.push_back({{"device", p.device},
                     {"port", p.port},
                     {"active", p.active},
                     {"gid", or_empty(p.gid)},
                     {"status", p.status},
                     {"detail", or_empty(p.detail)},
                     {"port_info", pi},
                     {"sl2vl", sl2vl},
                     {"nccl_vl", nccl_vl},
                     {"path_records", paths}});
  }
  return {{"source", f.source},
          {"replay_file", or_empty(f.replay_file)},
          {"transport_status", f.transport_status},
          {"transport_detail", or_empty(f.transport_detail)},
          {"nccl_ib_sl", f.nccl_ib_sl ? Json(*f.nccl_ib_sl) : Json(nullptr)},
          {"nccl_ib_sl_source", or_empty(f.nccl_ib_sl_source)},
          {"nccl_sl", sl},
          {"ports", ports}};
}

}  // namespace fabkit::probes
