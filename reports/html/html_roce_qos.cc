// The node page's RoCE QoS table, from the `roce_qos` section: per port where NCCL's traffic
// lands and whether that priority is lossless.
#include <sstream>

#include "reports/chart/svg_chart.h"
#include "reports/html/html_report.h"
#include "reports/json_scalar_text.h"

namespace fabkit::reports::html {
namespace {

std::string cell(const Json& j) { return json_scalar_text(j, ""); }

}  // namespace

std::string roce_qos_section(const Json& doc) {
  if (!doc.contains("roce_qos")) return "";
  const Json& ports = opt_array(doc["roce_qos"], "ports", "roce_qos");
  if (ports.empty()) return "";
  std::ostringstream o;
  o << "<h3>RoCE QoS</h3>\n<table class=\"roce-qos\"><thead><tr><th>port</th><th>netdev</th>"
       "<th>traffic class</th><th>DSCP</th><th>trust</th><th>priority</th><th>PFC priorities</th>"
       "<th>PFC on NCCL's priority</th><th>netdev MTU</th><th>DCB</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < ports.size(); ++i) {
    const std::string w = "roce_qos.ports[" + std::to_string(i) + "]";
    const Json& p = ports[i];
    const Json& path = p.contains("nccl_path") ? p["nccl_path"] : Json::object();
    const Json& dcb = p.contains("dcb") ? p["dcb"] : Json::object();
    const Json prio = path.value("priority", Json());
    const Json pfc = dcb.value("pfc_enabled_priorities", Json());
    std::string list, on;
    if (pfc.is_array()) {
      bool hit = false;
      for (const auto& x : pfc) {
        list += (list.empty() ? "" : ",") + x.dump();
        hit = hit || x == prio;
      }
      if (list.empty()) list = "none";
      if (prio.is_number()) on = hit ? "yes" : "no";
    }
    o << "<tr" << (on == "no" ? " class=\"sev-warn\"" : "") << "><td>"
      << escape(opt_string(p, "device", w) + ":" + cell(p.value("port", Json()))) << "</td><td>"
      << escape(opt_string(p, "netdev", w)) << "</td><td>"
      << escape(cell(path.value("traffic_class", Json()))) << "</td><td>"
      << escape(cell(path.value("dscp", Json()))) << "</td><td>"
      << escape(cell(path.value("trust", Json()))) << "</td><td>" << escape(cell(prio))
      << "</td><td>" << escape(list) << "</td><td class=\"sev\">" << escape(on) << "</td><td>"
      << escape(cell(p.value("netdev_mtu", Json()))) << "</td><td>"
      << escape(cell(dcb.value("status", Json()))) << "</td></tr>\n";
  }
  o << "</tbody></table>\n";
  return o.str();
}

}  // namespace fabkit::reports::html
