// The GPU health families of a node report (gpus.devices[].health): ECC and remapped-row counts,
// clock event reasons as one 0/1 sample per reason, temperature and its slowdown threshold, NVLink
// state and error counters per link, PCIe generation and width (current and max). Labels: gpu
// (NVML index) and bus_id, so an alert names the card to drain. Absent or null figures (a call the
// GPU does not support) give no sample: "not supported" is not 0.
#include <stdexcept>

#include "reports/prom/prom_fields.h"

namespace fabkit::reports::prom {
namespace {

// The reasons nvml.h defines, as gpus.devices[].health.clocks_event_reasons.reasons names them.
const char* kReasons[] = {"gpu_idle",
                          "applications_clocks_setting",
                          "sw_power_cap",
                          "hw_slowdown",
                          "sync_boost",
                          "sw_thermal_slowdown",
                          "hw_thermal_slowdown",
                          "hw_power_brake_slowdown",
                          "display_clocks_setting"};

struct GpuFamilies {
  Family ecc{"fabkit_node_gpu_ecc_errors",
             "ECC errors by type (corrected/uncorrected) and counter (volatile: since the driver "
             "loaded; aggregate: the board's life)",
             "gauge",
             {}};
  Family ecc_on{"fabkit_node_gpu_ecc_enabled", "1 when ECC is on", "gauge", {}};
  Family remap{"fabkit_node_gpu_remapped_rows",
               "Rows remapped, by cause (correctable/uncorrectable)",
               "gauge",
               {}};
  Family remap_pending{"fabkit_node_gpu_remap_pending",
                       "1 when a row remap waits for a GPU reset (drain and reset)",
                       "gauge",
                       {}};
  Family remap_failed{
      "fabkit_node_gpu_remap_failed", "1 when a row remap has failed (RMA the GPU)", "gauge", {}};
  Family retired_pending{"fabkit_node_gpu_retired_pages_pending",
                         "1 when retired pages wait for a GPU reset",
                         "gauge",
                         {}};
  Family clocks{"fabkit_node_gpu_clocks_event_reason",
                "1 when the clock event reason is active (nvmlDeviceGetCurrentClocksEventReasons)",
                "gauge",
                {}};
  Family temp{"fabkit_node_gpu_temperature_celsius", "GPU die temperature", "gauge", {}};
  Family slowdown{"fabkit_node_gpu_slowdown_temperature_celsius",
                  "Temperature at which the GPU cuts its clocks",
                  "gauge",
                  {}};
  Family link_up{"fabkit_node_gpu_nvlink_active", "1 when the NVLink is active", "gauge", {}};
  Family link_errors{"fabkit_node_gpu_nvlink_errors",
                     "NVLink error counters since the driver loaded (replay, recovery, crc_flit, "
                     "crc_data)",
                     "gauge",
                     {}};
  Family pcie_gen{
      "fabkit_node_gpu_pcie_generation", "PCIe link generation (current and max)", "gauge", {}};
  Family pcie_width{
      "fabkit_node_gpu_pcie_width", "PCIe link width in lanes (current and max)", "gauge", {}};
  Family procs{"fabkit_node_gpu_processes", "Compute processes holding the GPU", "gauge", {}};
};

Labels with(Labels l, const char* k, const std::string& v) {
  l.push_back({k, v});
  return l;
}

void flag(Family& f, const Labels& l, const Json& v) {
  if (v.is_boolean()) f.samples.push_back({l, v.get<bool>() ? 1.0 : 0.0});
}

void device(const Json& d, const std::string& w, GpuFamilies& g) {
  auto index = number(d, "index", w);
  Labels l = {{"gpu", index ? format_value(*index) : "?"}, {"bus_id", string_or(d, "bus_id", "")}};
  const Json& h = member(d, "health");
  if (!h.is_object()) return;
  const std::string hw = w + ".health";
  const Json& ecc = member(h, "ecc");
  flag(g.ecc_on, l, member(ecc, "enabled"));
  for (const char* counter : {"volatile", "aggregate"})
    for (const char* type : {"corrected", "uncorrected"})
      if (auto n = number(member(ecc, counter), type, hw + ".ecc." + counter))
        g.ecc.samples.push_back({with(with(l, "type", type), "counter", counter), *n});
  const Json& r = member(h, "remapped_rows");
  if (r.is_object()) {
    for (const char* cause : {"corrected", "uncorrected"})
      if (auto n = number(r, cause, hw + ".remapped_rows"))
        g.remap.samples.push_back({with(l, "cause", cause), *n});
    flag(g.remap_pending, l, member(r, "pending"));
    flag(g.remap_failed, l, member(r, "failure"));
  }
  flag(g.retired_pending, l, member(member(h, "retired_pages"), "pending"));
  const Json& c = member(h, "clocks_event_reasons");
  if (c.is_object()) {
    const Json& active = member(c, "reasons");
    for (const char* reason : kReasons) {
      bool on = false;
      for (size_t i = 0; active.is_array() && i < active.size(); ++i)
        on = on || (active[i].is_string() && active[i].get<std::string>() == reason);
      g.clocks.samples.push_back({with(l, "reason", reason), on ? 1.0 : 0.0});
    }
  }
  if (auto t = number(h, "temperature_c", hw)) g.temp.samples.push_back({l, *t});
  if (auto t = number(h, "slowdown_temperature_c", hw)) g.slowdown.samples.push_back({l, *t});
  const Json& links = member(h, "nvlinks");
  for (size_t i = 0; links.is_array() && i < links.size(); ++i) {
    std::string lw = hw + ".nvlinks[" + std::to_string(i) + "]";
    auto link = number(links[i], "link", lw);
    Labels ll = with(l, "link", link ? format_value(*link) : "?");
    flag(g.link_up, ll, member(links[i], "active"));
    for (const char* counter : {"replay", "recovery", "crc_flit", "crc_data"})
      if (auto n = number(links[i], counter, lw))
        g.link_errors.samples.push_back({with(ll, "counter", counter), *n});
  }
  const Json& p = member(h, "pcie");
  for (const char* which : {"current", "max"}) {
    if (auto v = number(p, (std::string(which) + "_generation").c_str(), hw + ".pcie"))
      g.pcie_gen.samples.push_back({with(l, "link", which), *v});
    if (auto v = number(p, (std::string(which) + "_width").c_str(), hw + ".pcie"))
      g.pcie_width.samples.push_back({with(l, "link", which), *v});
  }
  const Json& ps = member(h, "processes");
  if (ps.is_array()) g.procs.samples.push_back({l, double(ps.size())});
}

}  // namespace

std::vector<Family> gpu_health_families(const Json& r) {
  GpuFamilies g;
  const Json& devices = member(member(r, "gpus"), "devices");
  if (!devices.is_null() && !devices.is_array())
    throw std::invalid_argument("gpus.devices must be an array");
  for (size_t i = 0; devices.is_array() && i < devices.size(); ++i)
    device(devices[i], "gpus.devices[" + std::to_string(i) + "]", g);
  return {g.ecc,        g.ecc_on, g.remap,    g.remap_pending, g.remap_failed, g.retired_pending,
          g.clocks,     g.temp,   g.slowdown, g.link_up,       g.link_errors,  g.pcie_gen,
          g.pcie_width, g.procs};
}

}  // namespace fabkit::reports::prom
