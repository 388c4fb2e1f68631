// Prometheus families of a node report's `pcie` and `kernel_log` sections: per device the link
// as trained and as capable (generation, lanes), whether the judge found it degraded, the AER
// totals; per Xid and GPU the count in the log window; the kernel log's other event groups.
#include <stdexcept>

#include "reports/prom/prom_fields.h"

namespace fabkit::reports::prom {

std::vector<Family> pcie_families(const Json& r) {
  Family gen{"fabkit_node_pcie_link_generation",
             "PCIe generation of a device's upstream link: current (as trained) and capable (the "
             "lower of both ends' maximum)",
             "gauge",
             {}};
  Family lanes{"fabkit_node_pcie_link_width_lanes",
               "PCIe width of a device's upstream link in lanes: current and capable",
               "gauge",
               {}};
  Family degraded{"fabkit_node_pcie_link_degraded",
                  "1 when the link trained below what both ends can (pcie.link_*_degraded, "
                  "pcie.link_speed_low_gpu), else 0",
                  "gauge",
                  {}};
  Family aer{"fabkit_node_pcie_aer_errors_total",
             "AER errors a device counted since boot (sysfs aer_dev_*: TOTAL_ERR_*)",
             "counter",
             {}};
  const Json& devices = member(member(r, "pcie"), "devices");
  if (!devices.is_null() && !devices.is_array())
    throw std::invalid_argument("pcie.devices must be an array");
  for (size_t i = 0; devices.is_array() && i < devices.size(); ++i) {
    const Json& d = devices[i];
    const std::string w = "pcie.devices[" + std::to_string(i) + "]";
    const Labels l = {{"bus_id", string_or(d, "bus_id", "?")}, {"role", string_or(d, "role", "?")}};
    const Json& link = member(d, "link");
    const std::string status = string_or(link, "status", "");
    for (const char* state : {"current", "capable"}) {
      Labels ls = l;
      ls.push_back({"state", state});
      if (auto g = number(link, (std::string(state) + "_gen").c_str(), w + ".link"))
        gen.samples.push_back({ls, *g});
      if (auto n = number(link, (std::string(state) + "_lanes").c_str(), w + ".link"))
        lanes.samples.push_back({ls, *n});
    }
    if (status == "ok" || status == "width_degraded" || status == "speed_degraded" ||
        status == "speed_low_gpu")
      degraded.samples.push_back({l, status == "ok" ? 0.0 : 1.0});
    const Json& a = member(d, "aer");
    for (const char* sev : {"correctable", "nonfatal", "fatal"}) {
      if (auto t = number(member(a, sev), "total", w + ".aer." + sev)) {
        Labels ls = l;
        ls.push_back({"severity", sev});
        aer.samples.push_back({ls, *t});
      }
    }
  }
  Family readable{"fabkit_node_kernel_log_readable",
                  "1 when fabcheck could read the kernel log (kernel_log.readable)",
                  "gauge",
                  {}};
  Family xids{"fabkit_node_xid_events",
              "NVIDIA Xid lines per Xid and GPU in the kernel log window, with the Xid's class "
              "(drain, application, informational)",
              "gauge",
              {}};
  Family events{"fabkit_node_kernel_log_events",
                "Kernel log events per kind (aer_fatal, mlx5_health, link_down, ...) and device",
                "gauge",
                {}};
  const Json& log = member(r, "kernel_log");
  if (log.is_object()) {
    readable.samples.push_back({{}, member(log, "readable") == true ? 1.0 : 0.0});
    const Json& xs = member(log, "xids");
    for (size_t i = 0; xs.is_array() && i < xs.size(); ++i) {
      const std::string w = "kernel_log.xids[" + std::to_string(i) + "]";
      auto code = number(xs[i], "xid", w);
      auto count = number(xs[i], "count", w);
      if (!code || !count) continue;
      xids.samples.push_back({{{"xid", format_value(*code)},
                               {"bus_id", string_or(xs[i], "bus_id", "?")},
                               {"class", string_or(xs[i], "class", "?")}},
                              *count});
    }
    const Json& es = member(log, "events");
    for (size_t i = 0; es.is_array() && i < es.size(); ++i) {
      auto count = number(es[i], "count", "kernel_log.events[" + std::to_string(i) + "]");
      if (!count) continue;
      events.samples.push_back(
          {{{"kind", string_or(es[i], "kind", "?")}, {"device", string_or(es[i], "device", "?")}},
           *count});
    }
  }
  return {gen, lanes, degraded, aer, readable, xids, events};
}

}  // namespace fabkit::reports::prom
