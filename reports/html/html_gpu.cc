// The GPU table of the HTML node page: per GPU its identity and the health figures NVML gave
// (gpus.devices[].health, docs/json/gpus.md); the verdicts are in the findings table above it.
#include <sstream>

#include "reports/chart/svg_chart.h"
#include "reports/html/html_report.h"

namespace fabkit::reports::html {
namespace {

const Json kNull;

const Json& at(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) ? j[key] : kNull;
}

std::string num(const Json& j, const char* key, const std::string& where) {
  auto v = opt_number(j, key, where);
  return v ? chart::format_number(*v) : "–";
}

std::string on_off(const Json& v) { return v.is_boolean() ? (v.get<bool>() ? "on" : "off") : "–"; }

std::string cell(const std::string& text, bool num_cell = false) {
  return std::string("<td") + (num_cell ? " class=\"num\"" : "") + ">" + escape(text) + "</td>";
}

}  // namespace

std::string gpu_section(const Json& gpus) {
  std::ostringstream o;
  const Json& devices = opt_array(gpus, "devices", "gpus");
  if (devices.empty()) return "";
  o << "<h3>GPU health (NVML)</h3>\n<table class=\"gpus\"><thead><tr><th>GPU</th><th>bus id</th>"
       "<th>name</th><th>ECC</th><th>uncorrected ECC (volatile / aggregate)</th>"
       "<th>remapped rows (corr / uncorr)</th><th>temperature / slowdown (°C)</th>"
       "<th>clock event reasons</th><th>PCIe now / max</th><th>NVLinks active</th>"
       "<th>fabric</th><th>processes</th><th>VBIOS</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < devices.size(); ++i) {
    const Json& d = devices[i];
    const std::string w = "gpus.devices[" + std::to_string(i) + "]";
    const Json& h = at(d, "health");
    const std::string hw = w + ".health";
    const Json& ecc = at(h, "ecc");
    std::string remap = "–";
    if (at(h, "remapped_rows").is_object()) {
      const Json& r = h["remapped_rows"];
      remap = num(r, "corrected", hw + ".remapped_rows") + " / " +
              num(r, "uncorrected", hw + ".remapped_rows") +
              (at(r, "failure") == true   ? " (remap FAILED)"
               : at(r, "pending") == true ? " (pending)"
                                          : "");
    }
    std::string reasons = "–";
    if (at(h, "clocks_event_reasons").is_object()) {
      reasons.clear();
      for (const auto& r : opt_array(h["clocks_event_reasons"], "reasons", hw))
        if (r.is_string()) reasons += (reasons.empty() ? "" : ", ") + r.get<std::string>();
      if (reasons.empty()) reasons = "none";
    }
    const Json& p = at(h, "pcie");
    std::string pcie = "Gen" + num(p, "current_generation", hw) + " x" +
                       num(p, "current_width", hw) + " / Gen" + num(p, "max_generation", hw) +
                       " x" + num(p, "max_width", hw);
    std::string links = "–";
    if (at(h, "nvlinks").is_array()) {
      int active = 0;
      for (const auto& l : h["nvlinks"]) active += at(l, "active") == true ? 1 : 0;
      links = std::to_string(active) + " / " + std::to_string(h["nvlinks"].size());
    }
    std::string procs = "–";
    if (at(h, "processes").is_array()) {
      procs = std::to_string(h["processes"].size());
      for (const auto& pr : h["processes"])
        procs += " · pid " + num(pr, "pid", hw + ".processes[]") +
                 (at(pr, "name").is_string() ? " " + pr["name"].get<std::string>() : "");
    }
    o << "<tr>" << cell(num(d, "index", w), true) << cell(opt_string(d, "bus_id", w))
      << cell(opt_string(d, "name", w)) << cell(on_off(at(ecc, "enabled")))
      << cell(num(at(ecc, "volatile"), "uncorrected", hw) + " / " +
                  num(at(ecc, "aggregate"), "uncorrected", hw),
              true)
      << cell(remap, true)
      << cell(num(h, "temperature_c", hw) + " / " + num(h, "slowdown_temperature_c", hw), true)
      << cell(reasons) << cell(pcie) << cell(links, true)
      << cell(opt_string(at(h, "fabric"), "state", hw + ".fabric")) << cell(procs)
      << cell(opt_string(h, "vbios_version", hw)) << "</tr>\n";
  }
  o << "</tbody></table>\n";
  return o.str();
}

}  // namespace fabkit::reports::html
