// Prometheus families of a node report's `ib_qos` section: per IB port the VL NCCL's SL reaches,
// OperationalVLs (as data VLs) and the SM's PathRecord SL.
#include <stdexcept>

#include "reports/prom/prom_fields.h"

namespace fabkit::reports::prom {

std::vector<Family> ib_qos_families(const Json& r) {
  Family vl{"fabkit_node_ib_nccl_vl",
            "The VL NCCL's service level maps to on the IB port (ib_qos.ports[].nccl_vl; 15 and "
            "values at or above the data VLs are dropped)",
            "gauge",
            {}};
  Family data_vls{"fabkit_node_ib_data_vls",
                  "How many data VLs the IB port's OperationalVLs enables (0: not set by an SM)",
                  "gauge",
                  {}};
  Family path_sl{"fabkit_node_ib_path_record_sl",
                 "The SL the subnet manager's PathRecord gives for the port's own GID",
                 "gauge",
                 {}};
  const Json& ports = member(member(r, "ib_qos"), "ports");
  if (!ports.is_null() && !ports.is_array())
    throw std::invalid_argument("ib_qos.ports must be an array");
  for (size_t i = 0; ports.is_array() && i < ports.size(); ++i) {
    const Json& p = ports[i];
    const std::string w = "ib_qos.ports[" + std::to_string(i) + "]";
    const Labels l = {{"device", string_or(p, "device", "?")},
                      {"port", member(p, "port").is_number() ? member(p, "port").dump() : "?"}};
    if (auto v = number(p, "nccl_vl", w)) vl.samples.push_back({l, *v});
    if (auto v = number(member(p, "port_info"), "data_vls", w + ".port_info"))
      data_vls.samples.push_back({l, *v});
    const Json& paths = member(p, "path_records");
    if (paths.is_array() && !paths.empty())
      if (auto v = number(member(paths[0], "record"), "sl", w + ".path_records[0].record"))
        path_sl.samples.push_back({l, *v});
  }
  return {vl, data_vls, path_sl};
}

}  // namespace fabkit::reports::prom
