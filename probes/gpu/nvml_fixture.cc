// GPU facts → the fake NVML's fixture (nvml_fake.h), for `fabcheck node --nvml-record FILE`: what
// this machine's NVML answered, replayable anywhere with --nvml-replay FILE. The inverse of the
// gather through the fake: gathering the recorded fixture gives the same facts (tested).
#include <algorithm>
#include <cstdio>

#include "probes/gpu/gpu_facts.h"

namespace fabkit::probes {
namespace {

template <typename T>
void put(Json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

// "NVIDIA's bus id form": NVML answers "00000000:18:00.0"; the facts hold the sysfs form.
std::string nvml_bus_id(const std::string& sysfs) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(sysfs.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return sysfs;
  char out[32];
  std::snprintf(out, sizeof out, "%08X:%02X:%02X.%X", domain, bus, dev, fn);
  return out;
}

Json ecc_fixture(const EccCounts& volatile_counts, const EccCounts& aggregate_counts) {
  Json counts = Json::object();
  for (auto [name, c] :
       {std::pair{"volatile", &volatile_counts}, std::pair{"aggregate", &aggregate_counts}}) {
    Json one = Json::object();
    put(one, "corrected", c->corrected);
    put(one, "uncorrected", c->uncorrected);
    if (!one.empty()) counts[name] = one;
  }
  return counts;
}

Json ecc_location_fixture(const EccFacts& e) {
  Json out = Json::object();
  for (auto [name, loc] : {std::pair{"sram", &e.sram}, std::pair{"dram", &e.dram}})
    if (*loc)
      if (Json c = ecc_fixture((*loc)->volatile_counts, (*loc)->aggregate_counts); !c.empty())
        out[name] = c;
  return out;
}

Json device_fixture(const GpuDevice& d) {
  const GpuHealth& h = d.health;
  Json j = {{"name", d.name},
            {"uuid", d.uuid},
            {"bus_id", nvml_bus_id(d.bus_id)},
            {"numa_node", d.numa_source == "nvml" ? Json(*d.numa_node) : Json(nullptr)}};
  if (d.memory_bytes) j["memory_total"] = *d.memory_bytes;
  if (d.compute_capability) j["compute_capability"] = *d.compute_capability;
  Json errors = Json::object();
  for (const auto& [call, code] : d.error_codes) errors[call] = code;
  if (!errors.empty()) j["errors"] = errors;
  put(j, "vbios_version", h.vbios_version);
  put(j, "inforom_image_version", h.inforom_image_version);
  put(j, "serial", h.serial);
  put(j, "board_part_number", h.board_part_number);
  if (h.ecc.enabled)
    j["ecc_mode"] = {{"current", *h.ecc.enabled},
                     {"pending", h.ecc.pending_enabled.value_or(*h.ecc.enabled)}};
  if (Json c = ecc_fixture(h.ecc.volatile_counts, h.ecc.aggregate_counts); !c.empty())
    j["ecc_errors"] = c;
  if (Json c = ecc_location_fixture(h.ecc); !c.empty()) j["ecc_location_errors"] = c;
  if (h.retired_pages.pending) {
    Json rp = {{"pending", *h.retired_pages.pending}};
    put(rp, "multiple_single_bit", h.retired_pages.multiple_single_bit);
    put(rp, "double_bit", h.retired_pages.double_bit);
    j["retired_pages"] = rp;
  }
  if (h.remapped_rows)
    j["remapped_rows"] = {{"corrected", h.remapped_rows->corrected},
                          {"uncorrected", h.remapped_rows->uncorrected},
                          {"pending", h.remapped_rows->pending},
                          {"failure", h.remapped_rows->failure}};
  if (h.clocks) j["clocks_event_reasons"] = h.clocks->mask;
  put(j, "temperature_c", h.thermal.temperature_c);
  Json thresholds = Json::object();
  put(thresholds, "slowdown", h.thermal.slowdown_c);
  put(thresholds, "shutdown", h.thermal.shutdown_c);
  if (!thresholds.empty()) j["temperature_thresholds_c"] = thresholds;
  put(j, "persistence_mode", h.persistence_mode);
  Json pcie = Json::object();
  put(pcie, "current_generation", h.pcie_current.generation);
  put(pcie, "current_width", h.pcie_current.width);
  put(pcie, "max_generation", h.pcie_max.generation);
  put(pcie, "max_width", h.pcie_max.width);
  if (!pcie.empty()) j["pcie"] = pcie;
  if (h.nvlinks) {
    Json links = Json::array();
    for (const auto& l : *h.nvlinks) {
      while (links.size() < l.link) links.push_back(nullptr);  // an index that answered nothing
      Json one = {{"active", l.active}};
      put(one, "replay", l.replay);
      put(one, "recovery", l.recovery);
      put(one, "crc_flit", l.crc_flit);
      put(one, "crc_data", l.crc_data);
      links.push_back(one);
    }
    j["nvlinks"] = links;
  }
  if (h.fabric) {
    Json f = {{"state", h.fabric->state},
              {"status", h.fabric->status},
              {"clique_id", h.fabric->clique_id},
              {"cluster_uuid", h.fabric->cluster_uuid},
              {"max_version", h.fabric->struct_version}};
    put(f, "health_mask", h.fabric->health_mask);
    put(f, "health_summary", h.fabric->health_summary);
    j["fabric"] = f;
  }
  if (h.processes) {
    Json ps = Json::array();
    for (const auto& p : *h.processes)
      ps.push_back({{"pid", p.pid},
                    {"used_memory", p.used_memory_bytes ? Json(*p.used_memory_bytes) : Json()}});
    j["processes"] = ps;
  }
  if (h.mig_enabled)
    j["mig_mode"] = {{"current", *h.mig_enabled},
                     {"pending", h.mig_pending_enabled.value_or(*h.mig_enabled)}};
  put(j, "compute_mode", h.compute_mode);
  return j;
}

}  // namespace

Json nvml_fixture_from_facts(const GpuFacts& f) {
  if (!f.nvml_loaded) return {{"load_error", f.nvml_error.value_or("not loaded")}};
  Json j = Json::object();
  if (f.nvml_init_code) j["init"] = *f.nvml_init_code;
  if (f.driver_version) j["driver_version"] = *f.driver_version;
  if (f.cuda_driver_version) {
    int major = 0, minor = 0;
    if (std::sscanf(f.cuda_driver_version->c_str(), "%d.%d", &major, &minor) == 2)
      j["cuda_driver_version"] = major * 1000 + minor * 10;
  }
  // Entry points this library lacks: a recorded call with no code is a missing symbol.
  Json missing = Json::array();
  for (const auto& d : f.devices)
    for (const auto& n : d.health.not_supported)
      if (!n.code && std::find(missing.begin(), missing.end(), n.call) == missing.end())
        missing.push_back(n.call);
  if (!missing.empty()) j["missing_entry_points"] = missing;
  Json devices = Json::array();
  for (const auto& d : f.devices) devices.push_back(device_fixture(d));
  j["devices"] = devices;
  return j;
}

}  // namespace fabkit::probes
