// The InfiniBand QoS side of cluster drift, from a node report's `ib_qos` section
// (docs/json/ib_qos.md): per IB port the SL-to-VL table, OperationalVLs, the VL NCCL's SL reaches
// and the SM's PathRecord SL. NCCL_IB_SL is one value for the whole job, so a node whose SM
// programming differs (a port the SM did not reach, a per-port qos policy) is a finding even when
// its own table looks consistent.
#include "slurm/drift_judge.h"

namespace fabkit::slurm {
namespace {

std::string str(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

}  // namespace

void add_ib_qos_drift_facts(const Json& r, std::map<std::string, std::string>& out) {
  if (!r.is_object() || !r.contains("ib_qos") || !r["ib_qos"].is_object()) return;
  const Json& ports = r["ib_qos"].value("ports", Json());
  if (!ports.is_array()) return;
  for (const auto& p : ports) {
    if (!p.is_object() || str(p, "status") != "ok" || !p.contains("port") ||
        !p["port"].is_number_integer())
      continue;
    const std::string obj = str(p, "device") + ":" + std::to_string(p["port"].get<int>());
    if (p.contains("sl2vl") && p["sl2vl"].is_array()) {
      std::string t;
      for (const auto& v : p["sl2vl"]) t += (t.empty() ? "" : ",") + v.dump();
      out["ib_sl2vl:" + obj] = t;
    }
    const Json pi = p.value("port_info", Json::object());
    if (std::string v = str(pi, "oper_vls"); !v.empty()) out["ib_oper_vls:" + obj] = v;
    if (p.contains("nccl_vl") && p["nccl_vl"].is_number_integer())
      out["ib_nccl_vl:" + obj] = "VL" + p["nccl_vl"].dump();
    const Json paths = p.value("path_records", Json::array());
    if (paths.is_array() && !paths.empty() && paths[0].is_object() &&
        paths[0].value("record", Json()).is_object()) {
      const Json& rec = paths[0]["record"];
      if (rec.contains("sl") && rec["sl"].is_number_integer())
        out["ib_path_sl:" + obj] = rec["sl"].dump();
    }
  }
}

}  // namespace fabkit::slurm
