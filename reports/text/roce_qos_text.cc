// Text of a node report's `roce_qos` section: per RoCE port where NCCL's traffic lands (traffic
// class, DSCP, trust, priority) and whether that priority is lossless (PFC, ECN), the MTUs, and the
// DCB and statistics state.
#include "reports/json_scalar_text.h"
#include "reports/text/table.h"
#include "reports/text/text_parts.h"

namespace fabkit::reports::text {
namespace {

std::string or_dash(const Json& j) { return json_scalar_text(j, "-"); }

std::string priorities(const Json& list) {
  if (!list.is_array()) return "?";
  if (list.empty()) return "none";
  std::string s;
  for (const auto& p : list) s += (s.empty() ? "" : ",") + p.dump();
  return s;
}

// "on", "off" or "-" (the file is not exposed) for priority `prio` of an ecn_*_enabled object.
std::string ecn_at(const Json& map, const Json& prio) {
  if (!prio.is_number() || !map.is_object()) return "-";
  const Json& v = member(map, prio.dump().c_str());
  return v.is_boolean() ? (v.get<bool>() ? "on" : "off") : "-";
}

}  // namespace

void render_roce_qos(const Report& r, std::ostream& out, const Style& style) {
  for (const auto& s : r.sections) {
    if (s.name != "roce_qos") continue;
    const Json& ports = member(s.facts, "ports");
    if (!ports.is_array() || ports.empty()) return;  // no RoCE port: nothing to say
    const std::string source = str(member(s.facts, "source"));
    out << "\nRoCE QoS (NCCL's traffic class -> priority; PFC/ECN on it; "
        << (source == "sysroot" ? "DCB and statistics not read under --sysroot"
                                : "DCB and statistics: " + source)
        << ")\n";
    Table t({{"port"},
             {"netdev"},
             {"TC", Align::kRight},
             {"DSCP", Align::kRight},
             {"trust"},
             {"prio", Align::kRight},
             {"PFC on"},
             {"PFC prios"},
             {"ECN np/rp"},
             {"MTU net/roce"},
             {"DCB"}});
    for (const auto& p : ports) {
      const Json& path = member(p, "nccl_path");
      const Json& dcb = member(p, "dcb");
      const Json& prio = member(path, "priority");
      const Json& pfc = member(dcb, "pfc_enabled_priorities");
      std::string pfc_on = "-";
      if (pfc.is_array() && prio.is_number()) {
        bool on = false;
        for (const auto& x : pfc) on = on || x == prio;
        pfc_on = on ? "yes" : style.bad("NO");
      }
      t.add_row({str(member(p, "device")) + ":" + or_dash(member(p, "port")),
                 str(member(p, "netdev")), or_dash(member(path, "traffic_class")),
                 or_dash(member(path, "dscp")), str(member(path, "trust")), or_dash(prio), pfc_on,
                 pfc.is_array() ? priorities(pfc) : "-",
                 ecn_at(member(p, "ecn_np_enabled"), prio) + "/" +
                     ecn_at(member(p, "ecn_rp_enabled"), prio),
                 or_dash(member(p, "netdev_mtu")) + "/" +
                     or_dash(member(p, "active_mtu").is_null() ? member(p, "roce_mtu_allowed")
                                                               : member(p, "active_mtu")),
                 str(member(dcb, "status"))});
    }
    t.render(out);
  }
}

}  // namespace fabkit::reports::text
