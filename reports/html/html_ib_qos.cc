// The node page's IB QoS table, from the `ib_qos` section: per IB port the VL NCCL's SL reaches
// and the SM's PathRecord SL.
#include <sstream>

#include "reports/html/html_report.h"
#include "reports/json_scalar_text.h"

namespace fabkit::reports::html {
namespace {

std::string cell(const Json& j) { return json_scalar_text(j, ""); }

}  // namespace

std::string ib_qos_section(const Json& doc) {
  if (!doc.contains("ib_qos")) return "";
  const Json& ports = opt_array(doc["ib_qos"], "ports", "ib_qos");
  if (ports.empty()) return "";
  std::ostringstream o;
  o << "<h3>IB QoS</h3>\n<table class=\"ib-qos\"><thead><tr><th>port</th><th>NCCL's SL</th>"
       "<th>VL</th><th>OperationalVLs</th><th>VLCap</th><th>PathRecord SL</th><th>status</th>"
       "</tr></thead><tbody>\n";
  const std::string sl = cell(doc["ib_qos"].value("nccl_sl", Json()));
  for (size_t i = 0; i < ports.size(); ++i) {
    const std::string w = "ib_qos.ports[" + std::to_string(i) + "]";
    const Json& p = ports[i];
    const Json pi = p.value("port_info", Json());
    const Json vl = p.value("nccl_vl", Json());
    const int data_vls = pi.is_object() ? pi.value("data_vls", 0) : 0;
    const bool dropped = vl.is_number_integer() &&
                         (vl.get<int>() == 15 || (data_vls > 0 && vl.get<int>() >= data_vls));
    const Json paths = p.value("path_records", Json::array());
    std::string path_sl;
    if (paths.is_array() && !paths.empty() && paths[0].is_object() &&
        paths[0].value("record", Json()).is_object())
      path_sl = cell(paths[0]["record"].value("sl", Json()));
    o << "<tr" << (dropped ? " class=\"sev-fail\"" : "") << "><td>"
      << escape(opt_string(p, "device", w) + ":" + cell(p.value("port", Json()))) << "</td><td>"
      << escape(sl) << "</td><td class=\"sev\">" << escape(cell(vl)) << (dropped ? " dropped" : "")
      << "</td><td>" << escape(pi.is_object() ? cell(pi.value("oper_vls", Json())) : "")
      << "</td><td>" << escape(pi.is_object() ? cell(pi.value("vl_cap", Json())) : "")
      << "</td><td>" << escape(path_sl) << "</td><td>" << escape(cell(p.value("status", Json())))
      << "</td></tr>\n";
  }
  o << "</tbody></table>\n";
  return o.str();
}

}  // namespace fabkit::reports::html
