// The GPU health part of a node report's text: one table of the figures NVML gave per GPU, then
// one health line per GPU naming its warn/fail findings (or "ok"), so a reader sees which GPU to
// drain before reading the findings below.
#include <map>

#include "reports/text/table.h"
#include "reports/text/terminal_safe.h"
#include "reports/text/text_parts.h"

namespace fabkit::reports::text {
namespace {

std::string num(const Json& v) { return v.is_number() ? v.dump() : "-"; }

std::string on_off(const Json& v) { return v.is_boolean() ? (v.get<bool>() ? "on" : "off") : "-"; }

std::string pair_of(const Json& a, const Json& b) {
  if (!a.is_number() && !b.is_number()) return "-";
  return num(a) + "/" + num(b);
}

std::string pcie(const Json& p) {
  auto link = [](const Json& gen, const Json& width) {
    if (!gen.is_number() && !width.is_number()) return std::string("-");
    return "Gen" + num(gen) + " x" + num(width);
  };
  std::string now = link(member(p, "current_generation"), member(p, "current_width"));
  std::string max = link(member(p, "max_generation"), member(p, "max_width"));
  return now == "-" && max == "-" ? "-" : now + " of " + max;
}

std::string remap(const Json& r) {
  if (!r.is_object()) return "-";
  std::string s = num(member(r, "corrected")) + "/" + num(member(r, "uncorrected"));
  if (member(r, "failure") == true) return s + " FAILED";
  if (member(r, "pending") == true) return s + " pending";
  return s;
}

std::string clocks(const Json& c) {
  if (!c.is_object()) return "-";
  std::string s;
  for (const auto& r : member(c, "reasons"))
    if (r.is_string()) s += (s.empty() ? "" : ",") + terminal_safe(r.get<std::string>());
  return s.empty() ? "none" : s;
}

std::string nvlinks(const Json& links) {
  if (!links.is_array()) return "-";
  int active = 0;
  for (const auto& l : links) active += member(l, "active") == true ? 1 : 0;
  return std::to_string(active) + "/" + std::to_string(links.size());
}

std::string temperature(const Json& h) {
  const Json& t = member(h, "temperature_c");
  if (!t.is_number()) return "-";
  const Json& slow = member(h, "slowdown_temperature_c");
  return t.dump() + (slow.is_number() ? "/" + slow.dump() : "") + " C";
}

std::string processes(const Json& ps) { return ps.is_array() ? std::to_string(ps.size()) : "-"; }

}  // namespace

void render_gpu_health(const Json& gpus, const std::vector<Finding>& findings, std::ostream& out,
                       const Style& style) {
  const Json& devices = member(gpus, "devices");
  if (!devices.is_array() || devices.empty()) return;
  out << "\nGPU health (NVML; ECC uncorrected volatile/aggregate, remapped rows "
         "corrected/uncorrected, temperature/slowdown)\n";
  Table t({{"gpu", Align::kRight},
           {"ecc"},
           {"ecc_unc"},
           {"remap"},
           {"temp"},
           {"clock_events"},
           {"pcie"},
           {"nvlink"},
           {"fabric"},
           {"procs", Align::kRight},
           {"persist"}});
  for (const auto& d : devices) {
    const Json& h = member(d, "health");
    const Json& ecc = member(h, "ecc");
    t.add_row({num(member(d, "index")), on_off(member(ecc, "enabled")),
               pair_of(member(member(ecc, "volatile"), "uncorrected"),
                       member(member(ecc, "aggregate"), "uncorrected")),
               remap(member(h, "remapped_rows")), temperature(h),
               clocks(member(h, "clocks_event_reasons")), pcie(member(h, "pcie")),
               nvlinks(member(h, "nvlinks")), str(member(member(h, "fabric"), "state")),
               processes(member(h, "processes")), on_off(member(h, "persistence_mode"))});
  }
  t.render(out);
  // Health lines: the GPU's own warn/fail findings, by subject (its bus id, or "GPU N").
  for (const auto& d : devices) {
    std::string bus = str(member(d, "bus_id"), "");
    std::string index = num(member(d, "index"));
    std::string subject = bus.empty() ? "GPU " + index : bus;
    std::string fails, warns;
    for (const auto& f : findings) {
      if (f.subject != subject || f.severity == Severity::kInfo) continue;
      std::string& list = f.severity == Severity::kFail ? fails : warns;
      list += (list.empty() ? "" : ", ") + terminal_safe(f.code);  // a saved report's text
    }
    out << "GPU " << index << (bus.empty() ? "" : " (" + bus + ")") << ": ";
    if (fails.empty() && warns.empty()) out << "ok";
    if (!fails.empty()) out << style.bad("FAIL") << " " << fails;
    if (!warns.empty()) out << (fails.empty() ? "" : "; ") << style.warn("warn") << " " << warns;
    out << "\n";
  }
}

}  // namespace fabkit::reports::text
