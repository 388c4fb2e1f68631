// The RoCE QoS side of cluster drift, from a node report's `roce_qos` section
// (docs/json/roce_qos.md): per RoCE port the PFC priorities, the trust mode, the priority NCCL's
// traffic lands on and ECN on it. A lossless class only works when every node and switch agrees,
// so a node that differs is a finding even when its own settings look consistent.
#include "slurm/drift_judge.h"

namespace fabkit::slurm {
namespace {

std::string str(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

}  // namespace

void add_roce_qos_drift_facts(const Json& r, std::map<std::string, std::string>& out) {
  if (!r.is_object() || !r.contains("roce_qos") || !r["roce_qos"].is_object()) return;
  const Json& ports = r["roce_qos"].value("ports", Json());
  if (!ports.is_array()) return;
  for (const auto& p : ports) {
    if (!p.is_object() || !p.contains("port") || !p["port"].is_number_integer()) continue;
    const std::string obj = str(p, "device") + ":" + std::to_string(p["port"].get<int>());
    const Json dcb = p.value("dcb", Json::object());
    const Json path = p.value("nccl_path", Json::object());
    if (str(dcb, "status") == "ok" && dcb.contains("pfc_enabled_priorities") &&
        dcb["pfc_enabled_priorities"].is_array()) {
      std::string list;
      for (const auto& x : dcb["pfc_enabled_priorities"])
        list += (list.empty() ? "" : ",") + x.dump();
      out["roce_pfc:" + obj] = list.empty() ? "none" : list;
    }
    if (std::string t = str(path, "trust"); !t.empty() && t != "unknown")
      out["roce_trust:" + obj] = t;
    if (path.contains("priority") && path["priority"].is_number_integer()) {
      const std::string prio = path["priority"].dump();
      out["roce_nccl_priority:" + obj] = prio;
      std::string ecn;
      for (const char* k : {"ecn_np_enabled", "ecn_rp_enabled"}) {
        const Json m = p.value(k, Json::object());
        if (m.is_object() && m.contains(prio) && m[prio].is_boolean())
          ecn += std::string(ecn.empty() ? "" : " ") + (k[4] == 'n' ? "np=" : "rp=") +
                 (m[prio].get<bool>() ? "on" : "off");
      }
      if (!ecn.empty()) out["roce_ecn:" + obj] = ecn;
    }
  }
}

}  // namespace fabkit::slurm
