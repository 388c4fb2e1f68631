#include "reports/baseline/node_baseline_roce_qos.h"

#include <map>
#include <sstream>

#include "reports/text/table.h"

namespace fabkit::reports::baseline {
namespace {

using text::Table;

const Json& at(const Json& j, const char* k) {
  static const Json kNull;
  return j.is_object() && j.contains(k) ? j[k] : kNull;
}

// port -> field -> value, only the values the report knows.
std::map<std::string, std::map<std::string, std::string>> settings(const Json& doc) {
  std::map<std::string, std::map<std::string, std::string>> out;
  const Json& ports = at(at(doc, "roce_qos"), "ports");
  for (size_t i = 0; ports.is_array() && i < ports.size(); ++i) {
    const Json& p = ports[i];
    if (!at(p, "device").is_string() || !at(p, "port").is_number_integer()) continue;
    auto& s = out[at(p, "device").get<std::string>() + ":" + at(p, "port").dump()];
    const Json& path = at(p, "nccl_path");
    if (at(path, "trust").is_string() && at(path, "trust") != "unknown") s["trust"] = at(path, "trust").get<std::string>();
    const Json& prio = at(path, "priority");
    if (prio.is_number_integer()) {
      s["nccl_priority"] = prio.dump();
      std::string ecn;
      for (const char* k : {"ecn_np_enabled", "ecn_rp_enabled"}) {
        const Json& v = at(at(p, k), prio.dump().c_str());
        if (v.is_boolean()) ecn += std::string(ecn.empty() ? "" : " ") + (k[4] == 'n' ? "np=" : "rp=") + (v.get<bool>() ? "on" : "off");
      }
      if (!ecn.empty()) s["ecn"] = ecn;
    }
    const Json& dcb = at(p, "dcb");
    if (at(dcb, "status") == "ok" && at(dcb, "pfc_enabled_priorities").is_array()) {
      std::string l;
      for (const auto& x : at(dcb, "pfc_enabled_priorities")) l += (l.empty() ? "" : ",") + x.dump();
      s["pfc_priorities"] = l.empty() ? "none" : l;
    }
    if (at(p, "netdev_mtu").is_number_integer()) s["netdev_mtu"] = at(p, "netdev_mtu").dump();
  }
  return out;
}

}  // namespace

RoceQosBaseline compare_roce_qos_baseline(const Json& old_doc, const Json& new_doc) {
  RoceQosBaseline b;
  auto o = settings(old_doc), n = settings(new_doc);
  b.present = !o.empty() || !n.empty();
  for (const auto& [port, fields] : n) {
    auto it = o.find(port);
    if (it == o.end()) continue;  // a port new or gone is the rdma baseline's business
    std::string what;
    for (const auto& [field, value] : fields) {
      auto was = it->second.find(field);
      if (was == it->second.end() || was->second == value) continue;
      b.changes.push_back({port, field, was->second, value});
      what += (what.empty() ? "" : "; ") + field + " " + was->second + " -> " + value;
    }
    if (!what.empty())
      b.findings.push_back(warn("baseline.roce_qos_changed", port,
                                port + ": RoCE QoS changed since the baseline: " + what +
                                    " (NCCL's lossless class depends on every one of them)",
                                "restore the baseline's settings (mlnx_qos trust/PFC, "
                                "ecn/roce_np|roce_rp/enable, ip link mtu; `fabcheck node` names the "
                                "exact command), or save a new baseline if the change is intended"));
  }
  return b;
}

Json roce_qos_baseline_json(const RoceQosBaseline& b) {
  Json changes = Json::array();
  for (const auto& c : b.changes)
    changes.push_back({{"port", c.port}, {"field", c.field}, {"old", c.old_value}, {"new", c.new_value}});
  return {{"changes", changes}};
}

std::string roce_qos_baseline_text(const RoceQosBaseline& b) {
  if (!b.present) return "";
  if (b.changes.empty()) return "RoCE QoS: unchanged since the baseline\n";
  std::string out = "RoCE QoS changed since the baseline\n";
  Table t({{"port"}, {"setting"}, {"baseline"}, {"now"}});
  for (const auto& c : b.changes) t.add_row({c.port, c.field, c.old_value, c.new_value});
  std::ostringstream table;
  t.render(table);
  return out + table.str();
}

}  // namespace fabkit::reports::baseline
