// Text of a node report's `pcie` and `kernel_log` sections: each device's link as trained against
// what it can, its AER totals, and the kernel log's Xid and other event groups.
#include <cstdint>

#include "reports/text/table.h"
#include "reports/text/text_parts.h"

namespace fabkit::reports::text {
namespace {

std::string gen_width(const Json& gen, const Json& lanes) {
  if (!gen.is_number() && !lanes.is_number()) return "-";
  return "Gen" + (gen.is_number() ? gen.dump() : std::string("?")) + " x" +
         (lanes.is_number() ? lanes.dump() : std::string("?"));
}

std::string aer_total(const Json& aer, const char* which) {
  const Json& t = member(member(aer, which), "total");
  return t.is_number() ? t.dump() : "-";
}

// "DEGRADED" and friends: the word for the judge's link status, colored by what it means.
std::string status_word(const Json& status, const Style& style) {
  const std::string s = str(status, "");
  if (s == "ok") return "ok";
  if (s == "width_degraded") return style.bad("NARROW");
  if (s == "speed_degraded") return style.bad("SLOW");
  if (s == "speed_low_gpu") return style.warn("slow (idle?)");
  if (s == "unknown") return style.warn("UNKNOWN");
  if (s == "no_link_info") return "no link info";
  return "-";  // root and downstream ports: the device below reports their link
}

void render_pcie(const Json& pcie, std::ostream& out, const Style& style) {
  if (member(pcie, "pci_bus_present") == false) {
    out << "\nPCIe links: unknown (no bus/pci/devices in this tree)\n";
    return;
  }
  const Json& devices = member(pcie, "devices");
  if (!devices.is_array() || devices.empty()) {
    out << "\nPCIe links: no GPU, NIC or NVSwitch on the PCI bus\n";
    return;
  }
  out << "\nPCIe links (trained vs what both ends can; AER totals correctable/non-fatal/fatal)\n";
  Table t(
      {{"device"}, {"role"}, {"port"}, {"link"}, {"capable"}, {"status"}, {"AER c/n/f"}, {"name"}});
  for (const auto& d : devices) {
    const Json& link = member(d, "link");
    const Json& aer = member(d, "aer");
    t.add_row({str(member(d, "bus_id")), str(member(d, "role")), str(member(d, "port")),
               gen_width(member(link, "current_gen"), member(link, "current_lanes")),
               gen_width(member(link, "capable_gen"), member(link, "capable_lanes")),
               status_word(member(link, "status"), style),
               aer.is_object() ? aer_total(aer, "correctable") + "/" + aer_total(aer, "nonfatal") +
                                     "/" + aer_total(aer, "fatal")
                               : "-",
               str(member(d, "name"))});
  }
  t.render(out);
}

std::string seconds(const Json& s) { return s.is_number() ? fixed(s, 1) : "-"; }

void render_kernel_log(const Json& log, std::ostream& out, const Style& style) {
  if (member(log, "readable") != true) {
    out << "\nkernel log: unknown (" << str(member(log, "unreadable_reason"), "not read") << ")\n";
    return;
  }
  const Json& xids = member(log, "xids");
  const Json& events = member(log, "events");
  const std::string since = str(member(log, "since"), "");
  out << "\nkernel log: " << member(log, "records").dump() << " records from "
      << str(member(log, "source")) << " (" << str(member(log, "format")) << ")"
      << (since.empty() ? " since boot"
                        : ", " + member(log, "records_in_window").dump() + " since " + since)
      << "; " << (xids.is_array() ? xids.size() : 0) << " Xid group(s), "
      << (events.is_array() ? events.size() : 0) << " other event group(s)\n";
  if (xids.is_array() && !xids.empty()) {
    Table t({{"Xid", Align::kRight},
             {"GPU"},
             {"count", Align::kRight},
             {"first_s", Align::kRight},
             {"last_s", Align::kRight},
             {"class"},
             {"meaning"}});
    for (const auto& x : xids) {
      const std::string cls = str(member(x, "class"));
      // A report from before on_gpu judged every Xid as its GPU's (kernel_log.not_a_gpu).
      const bool gpu_here = !x.is_object() || !x.contains("on_gpu") || member(x, "on_gpu") == true;
      t.add_row({member(x, "xid").dump(), str(member(x, "bus_id")), member(x, "count").dump(),
                 seconds(member(x, "first_s")), seconds(member(x, "last_s")),
                 !gpu_here                               ? cls + " (no GPU at this bus here)"
                 : cls == "drain" || cls == "by_message" ? style.bad(cls)
                                                         : cls,
                 str(member(x, "name"))});
    }
    t.render(out);
  }
  if (events.is_array() && !events.empty()) {
    Table t({{"event"},
             {"device"},
             {"count", Align::kRight},
             {"first_s", Align::kRight},
             {"last_s", Align::kRight},
             {"details"}});
    for (const auto& e : events) {
      std::string details;
      for (const auto& d : member(e, "details"))
        if (d.is_string()) details += (details.empty() ? "" : ", ") + d.get<std::string>();
      t.add_row({str(member(e, "kind")), str(member(e, "device")), member(e, "count").dump(),
                 seconds(member(e, "first_s")), seconds(member(e, "last_s")),
                 details.empty() ? "-" : details});
    }
    t.render(out);
  }
}

}  // namespace

void render_pcie_and_kernel_log(const Report& r, std::ostream& out, const Style& style) {
  for (const auto& s : r.sections) {
    if (s.name == "pcie") render_pcie(s.facts, out, style);
    if (s.name == "kernel_log") render_kernel_log(s.facts, out, style);
  }
}

}  // namespace fabkit::reports::text
