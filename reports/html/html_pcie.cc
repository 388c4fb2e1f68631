// The node page's PCIe links and kernel log tables, from the `pcie` and `kernel_log` sections.
#include <sstream>

#include "reports/chart/svg_chart.h"
#include "reports/html/html_report.h"

namespace fabkit::reports::html {
namespace {

std::string gen_width(const Json& link, const char* gen, const char* lanes, const std::string& w) {
  auto g = opt_number(link, gen, w);
  auto n = opt_number(link, lanes, w);
  if (!g && !n) return "";
  return "Gen" + (g ? chart::format_number(*g) : std::string("?")) + " x" +
         (n ? chart::format_number(*n) : std::string("?"));
}

std::string number_or_blank(const Json& j, const char* key, const std::string& w) {
  auto v = opt_number(j, key, w);
  return v ? chart::format_number(*v) : "";
}

}  // namespace

std::string pcie_and_kernel_log_section(const Json& doc) {
  std::ostringstream o;
  if (doc.contains("pcie")) {
    const Json& devices = opt_array(doc["pcie"], "devices", "pcie");
    o << "<h3>PCIe links</h3>\n";
    if (devices.empty()) {
      o << "<p>no GPU, NIC or NVSwitch on the PCI bus (or no PCI tree in the input)</p>\n";
    } else {
      o << "<table class=\"pcie\"><thead><tr><th>device</th><th>role</th><th>port</th>"
           "<th>link</th><th>capable</th><th>status</th><th>AER correctable / non-fatal / "
           "fatal</th><th>name</th></tr></thead><tbody>\n";
      for (size_t i = 0; i < devices.size(); ++i) {
        const std::string w = "pcie.devices[" + std::to_string(i) + "]";
        const Json& d = devices[i];
        const Json& link = d.contains("link") ? d["link"] : Json::object();
        const std::string status = opt_string(link, "status", w + ".link");
        std::string aer;
        if (d.contains("aer") && d["aer"].is_object())
          for (const char* sev : {"correctable", "nonfatal", "fatal"}) {
            const Json& c = d["aer"].contains(sev) ? d["aer"][sev] : Json();
            aer += (aer.empty() ? "" : " / ") + number_or_blank(c, "total", w + ".aer." + sev);
          }
        const bool bad = status == "width_degraded" || status == "speed_degraded";
        o << "<tr"
          << (bad                         ? " class=\"sev-fail\""
              : status == "speed_low_gpu" ? " class=\"sev-warn\""
                                          : "")
          << "><td>" << escape(opt_string(d, "bus_id", w)) << "</td><td>"
          << escape(opt_string(d, "role", w)) << "</td><td>" << escape(opt_string(d, "port", w))
          << "</td><td>" << escape(gen_width(link, "current_gen", "current_lanes", w + ".link"))
          << "</td><td>" << escape(gen_width(link, "capable_gen", "capable_lanes", w + ".link"))
          << "</td><td class=\"sev\">" << escape(status) << "</td><td>" << escape(aer)
          << "</td><td>" << escape(opt_string(d, "name", w)) << "</td></tr>\n";
      }
      o << "</tbody></table>\n";
    }
  }
  if (doc.contains("kernel_log")) {
    const Json& log = doc["kernel_log"];
    o << "<h3>Kernel log</h3>\n";
    if (log.value("readable", false) != true) {
      o << "<p>unknown: " << escape(opt_string(log, "unreadable_reason", "kernel_log")) << "</p>\n";
      return o.str();
    }
    const Json& xids = opt_array(log, "xids", "kernel_log");
    const Json& events = opt_array(log, "events", "kernel_log");
    o << "<p class=\"src\">" << escape(number_or_blank(log, "records", "kernel_log"))
      << " records from " << escape(opt_string(log, "source", "kernel_log")) << "</p>\n";
    if (xids.empty() && events.empty()) o << "<p>no Xid, AER, NIC or link events</p>\n";
    if (!xids.empty()) {
      o << "<table class=\"xids\"><thead><tr><th>Xid</th><th>GPU</th><th>count</th><th>first (s "
           "after boot)</th><th>last</th><th>class</th><th>meaning</th><th>line</th></tr></thead>"
           "<tbody>\n";
      for (size_t i = 0; i < xids.size(); ++i) {
        const std::string w = "kernel_log.xids[" + std::to_string(i) + "]";
        const Json& x = xids[i];
        const std::string cls = opt_string(x, "class", w);
        // A report from before on_gpu judged every Xid as its GPU's (kernel_log.not_a_gpu).
        const bool gpu_here = !x.contains("on_gpu") || x["on_gpu"] == true;
        o << "<tr"
          << (gpu_here && (cls == "drain" || cls == "by_message") ? " class=\"sev-fail\"" : "")
          << "><td class=\"num\">" << number_or_blank(x, "xid", w) << "</td><td>"
          << escape(opt_string(x, "bus_id", w)) << "</td><td class=\"num\">"
          << number_or_blank(x, "count", w) << "</td><td class=\"num\">"
          << number_or_blank(x, "first_s", w) << "</td><td class=\"num\">"
          << number_or_blank(x, "last_s", w) << "</td><td class=\"sev\">"
          << escape(gpu_here ? cls : cls + " (no GPU at this bus here)") << "</td><td>"
          << escape(opt_string(x, "name", w)) << "</td><td><code>"
          << escape(opt_string(x, "sample", w)) << "</code></td></tr>\n";
      }
      o << "</tbody></table>\n";
    }
    if (!events.empty()) {
      o << "<table class=\"kernel-events\"><thead><tr><th>event</th><th>device</th><th>count</th>"
           "<th>first (s after boot)</th><th>last</th><th>line</th></tr></thead><tbody>\n";
      for (size_t i = 0; i < events.size(); ++i) {
        const std::string w = "kernel_log.events[" + std::to_string(i) + "]";
        const Json& e = events[i];
        o << "<tr><td>" << escape(opt_string(e, "kind", w)) << "</td><td>"
          << escape(opt_string(e, "device", w)) << "</td><td class=\"num\">"
          << number_or_blank(e, "count", w) << "</td><td class=\"num\">"
          << number_or_blank(e, "first_s", w) << "</td><td class=\"num\">"
          << number_or_blank(e, "last_s", w) << "</td><td><code>"
          << escape(opt_string(e, "sample", w)) << "</code></td></tr>\n";
      }
      o << "</tbody></table>\n";
    }
  }
  return o.str();
}

}  // namespace fabkit::reports::html
