// The `pcie` section (docs/json/pcie.md).
#include <cmath>

#include "probes/pcie/pcie_facts.h"

namespace fabkit::probes {
namespace {

template <typename T>
Json or_null(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// GB/s with two decimals (a figure to read, not to compute with); null when unknown.
Json gbytes(const topo::PcieLink& l) {
  double g = pcie_link_gbytes(l);
  return g > 0 ? Json(std::round(g * 100) / 100) : Json(nullptr);
}

// The non-zero counts only: a healthy device's files list ~26 error names at 0 each.
Json aer_json(const std::optional<AerCounters>& c) {
  if (!c) return nullptr;
  Json counts = Json::object();
  for (const auto& [name, n] : c->by_name)
    if (n > 0) counts[name] = n;
  return {{"counts", counts}, {"total", or_null(c->total)}};
}

Json link_json(const PcieFacts& f, const PcieDevice& d) {
  auto st = link_state(f, d);
  return {{"current_speed", or_null(d.current_speed_text)},
          {"current_width", or_null(d.current_width_text)},
          {"max_speed", or_null(d.max_speed_text)},
          {"max_width", or_null(d.max_width_text)},
          {"current_gen", or_null(d.current.generation)},
          {"current_lanes", or_null(d.current.width)},
          {"max_gen", or_null(d.max.generation)},
          {"max_lanes", or_null(d.max.width)},
          {"capable_gen", st ? or_null(st->capable.generation) : Json(nullptr)},
          {"capable_lanes", st ? or_null(st->capable.width) : Json(nullptr)},
          {"current_gbytes_per_s", st ? gbytes(st->trained) : gbytes(d.current)},
          {"capable_gbytes_per_s", st ? gbytes(st->capable) : Json(nullptr)},
          {"status", st ? Json(link_status(f, d)) : Json(nullptr)}};
}

}  // namespace

Json to_json(const PcieFacts& f) {
  Json devices = Json::array();
  for (const auto& d : f.devices) {
    Json aer = nullptr;
    if (d.aer_correctable || d.aer_nonfatal || d.aer_fatal)
      aer = {{"correctable", aer_json(d.aer_correctable)},
             {"nonfatal", aer_json(d.aer_nonfatal)},
             {"fatal", aer_json(d.aer_fatal)},
             {"correctable_rise", or_null(d.aer_correctable_rise)},
             {"nonfatal_rise", or_null(d.aer_nonfatal_rise)},
             {"fatal_rise", or_null(d.aer_fatal_rise)}};
    devices.push_back({{"bus_id", d.bus_id},
                       {"role", to_string(d.role)},
                       {"port", to_string(d.port)},
                       {"vendor_id", d.vendor_id},
                       {"device_id", d.device_id},
                       {"class", d.class_code},
                       {"name", d.name.empty() ? Json(nullptr) : Json(d.name)},
                       {"driver", or_null(d.driver)},
                       {"parent", or_null(d.parent)},
                       {"sysfs_path", d.sysfs_path},
                       {"description", describe(d)},
                       {"link", link_json(f, d)},
                       {"aer", aer},
                       {"below", d.below}});
  }
  Json errors = Json::array();
  for (const auto& e : f.errors)
    errors.push_back(
        {{"call", e.call}, {"errno", e.err}, {"object", e.object}, {"message", e.to_string()}});
  return {{"pci_bus_present", f.pci_bus_present},
          {"names_source", f.names_source.empty() ? Json(nullptr) : Json(f.names_source)},
          {"aer_interval_ms", f.aer_interval_ms},
          {"devices", devices},
          {"errors", errors}};
}

}  // namespace fabkit::probes
