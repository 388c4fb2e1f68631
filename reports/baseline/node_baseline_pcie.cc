#include "reports/baseline/node_baseline_pcie.h"

#include <map>
#include <sstream>
#include <stdexcept>

#include "reports/json/member.h"
#include "reports/text/table.h"

namespace fabkit::reports::baseline {
namespace {

using text::Align;
using text::Table;

std::optional<int> int_field(const Json& j, const char* key, const std::string& where) {
  const Json& v = member(j, key);
  if (v.is_null()) return std::nullopt;
  if (!v.is_number())
    throw std::invalid_argument(where + "." + key + " must be a number, got " + v.dump());
  return static_cast<int>(v.get<double>());
}

std::optional<double> num_field(const Json& j, const char* key, const std::string& where) {
  const Json& v = member(j, key);
  if (v.is_null()) return std::nullopt;
  if (!v.is_number())
    throw std::invalid_argument(where + "." + key + " must be a number, got " + v.dump());
  return v.get<double>();
}

std::string str(const Json& j, const char* key) {
  const Json& v = member(j, key);
  return v.is_string() ? v.get<std::string>() : "";
}

const Json& array_of(const Json& section, const char* key, const std::string& where) {
  static const Json empty = Json::array();
  const Json& v = member(section, key);
  if (v.is_null()) return empty;
  if (!v.is_array()) throw std::invalid_argument(where + "." + key + " must be an array");
  return v;
}

constexpr const char* kAerNames[3] = {"correctable", "nonfatal", "fatal"};

struct Device {
  std::string role, status;
  std::optional<int> gen, lanes;
  std::optional<double> aer[3];
};

std::map<std::string, Device> devices_of(const Json& doc, const std::string& which) {
  std::map<std::string, Device> out;
  const Json& devs = array_of(member(doc, "pcie"), "devices", which + ": pcie");
  for (size_t i = 0; i < devs.size(); ++i) {
    const std::string w = which + ": pcie.devices[" + std::to_string(i) + "]";
    const Json& d = devs[i];
    const Json& link = member(d, "link");
    Device x;
    x.role = str(d, "role");
    x.status = str(link, "status");
    x.gen = int_field(link, "current_gen", w + ".link");
    x.lanes = int_field(link, "current_lanes", w + ".link");
    for (int k = 0; k < 3; ++k)
      x.aer[k] =
          num_field(member(member(d, "aer"), kAerNames[k]), "total", w + ".aer." + kAerNames[k]);
    out[str(d, "bus_id")] = x;
  }
  return out;
}

struct Xid {
  int count = 0;
  std::string cls;
  bool on_gpu = true;  // false: the report found no GPU at the bus (kernel_log.not_a_gpu)
};

std::map<std::pair<int, std::string>, Xid> xids_of(const Json& doc, const std::string& which) {
  std::map<std::pair<int, std::string>, Xid> out;
  const Json& xs = array_of(member(doc, "kernel_log"), "xids", which + ": kernel_log");
  for (size_t i = 0; i < xs.size(); ++i) {
    const std::string w = which + ": kernel_log.xids[" + std::to_string(i) + "]";
    auto code = int_field(xs[i], "xid", w);
    auto count = int_field(xs[i], "count", w);
    if (!code || !count) throw std::invalid_argument(w + ".xid and .count are required");
    // Reports from before the field judged every Xid as a GPU's; null is "the PCI devices were
    // not listed", which the node report did not drain on either.
    const Json& gpu = member(xs[i], "on_gpu");
    if (!gpu.is_null() && !gpu.is_boolean())
      throw std::invalid_argument(w + ".on_gpu must be true, false or null, got " + gpu.dump());
    const bool on_gpu = !xs[i].contains("on_gpu") || (gpu.is_boolean() && gpu.get<bool>());
    out[{*code, str(xs[i], "bus_id")}] = {*count, str(xs[i], "class"), on_gpu};
  }
  return out;
}

std::string link_text(const std::optional<int>& gen, const std::optional<int>& lanes) {
  if (!gen && !lanes) return "-";
  return "Gen" + (gen ? std::to_string(*gen) : std::string("?")) + " x" +
         (lanes ? std::to_string(*lanes) : std::string("?"));
}

std::string aer_text(const std::optional<double> (&a)[3]) {
  std::string s;
  for (int k = 0; k < 3; ++k)
    s += (k ? "/" : "") + (a[k] ? std::to_string(static_cast<long long>(*a[k])) : std::string("-"));
  return s;
}

bool is_selected(const std::string& role) {
  return role == "gpu" || role == "nic" || role == "nvswitch";
}

}  // namespace

PcieBaseline compare_pcie_baseline(const Json& old_doc, const Json& new_doc) {
  PcieBaseline b;
  const auto olds = devices_of(old_doc, "old");
  const auto news = devices_of(new_doc, "new");
  std::map<std::string, PcieLinkRow> rows;
  for (const auto& [bus, d] : olds) {
    auto& r = rows[bus];
    r.bus_id = bus;
    r.role = d.role;
    r.old_present = true;
    r.old_gen = d.gen;
    r.old_lanes = d.lanes;
    for (int k = 0; k < 3; ++k) r.old_aer[k] = d.aer[k];
  }
  for (const auto& [bus, d] : news) {
    auto& r = rows[bus];
    r.bus_id = bus;
    r.role = d.role;
    r.new_present = true;
    r.new_gen = d.gen;
    r.new_lanes = d.lanes;
    r.new_status = d.status;
    for (int k = 0; k < 3; ++k) r.new_aer[k] = d.aer[k];
  }
  const bool new_has_tree = member(member(new_doc, "pcie"), "pci_bus_present") == true;
  for (auto& [bus, r] : rows) {
    b.links.push_back(r);
    if (r.old_present && !r.new_present && new_has_tree && is_selected(r.role))
      b.findings.push_back(fail("baseline.pcie_device_lost", bus,
                                r.role + " " + bus +
                                    " was on the PCI bus in the baseline and is "
                                    "not now",
                                "lspci -s " + bus + "; dmesg | grep -i -E 'xid|aer|" + bus +
                                    "': a device that fell off the bus needs the node drained and "
                                    "power-cycled"));
    if (!r.old_present || !r.new_present) continue;
    // The upstream links only (root and downstream ports have no status: the device below
    // reports their link).
    if (!r.new_status.empty() && r.old_gen && r.new_gen && r.old_lanes && r.new_lanes) {
      const bool narrower = *r.new_lanes < *r.old_lanes;
      const bool slower = *r.new_gen < *r.old_gen;
      if (narrower || slower) {
        const std::string msg = r.role + " " + bus + ": link " + link_text(r.old_gen, r.old_lanes) +
                                " in the baseline, " + link_text(r.new_gen, r.new_lanes) + " now";
        const std::string fix = "lspci -vv -s " + bus +
                                " | grep -E 'LnkCap:|LnkSta:'; fabcheck node names the link's "
                                "own finding (pcie.*)";
        if (!narrower && r.new_status == "speed_low_gpu")
          b.findings.push_back(warn("baseline.pcie_link_dropped", bus,
                                    msg + " (a GPU's link may be slower while it idles: compare "
                                          "two runs under load)",
                                    fix));
        else
          b.findings.push_back(fail("baseline.pcie_link_dropped", bus, msg, fix));
      }
    }
    std::string rises;
    Severity worst = Severity::kInfo;
    for (int k = 0; k < 3; ++k) {
      // A total below the baseline's: the counters were reset (a reboot) in between.
      if (!r.old_aer[k] || !r.new_aer[k] || *r.new_aer[k] <= *r.old_aer[k]) continue;
      rises += (rises.empty() ? "" : ", ") + std::string(kAerNames[k]) + " +" +
               std::to_string(static_cast<long long>(*r.new_aer[k] - *r.old_aer[k]));
      worst = std::max(worst, k == 2 ? Severity::kFail : Severity::kWarn);
    }
    if (!rises.empty()) {
      const std::string msg = r.role + " " + bus + ": AER errors since the baseline: " + rises;
      const std::string fix =
          "dmesg | grep -i -E 'aer|pcie bus error'; fabcheck node's pcie.aer_* "
          "findings say which errors";
      b.findings.push_back(worst == Severity::kFail ? fail("baseline.pcie_aer_new", bus, msg, fix)
                                                    : warn("baseline.pcie_aer_new", bus, msg, fix));
    }
  }
  const auto old_x = xids_of(old_doc, "old");
  const auto new_x = xids_of(new_doc, "new");
  std::map<std::pair<int, std::string>, XidRow> xrows;
  for (const auto& [k, x] : old_x) xrows[k] = {k.first, k.second, x.cls, x.count, 0, x.on_gpu};
  for (const auto& [k, x] : new_x) {
    auto& row = xrows[k];
    row.xid = k.first;
    row.bus_id = k.second;
    row.cls = x.cls;
    row.on_gpu = x.on_gpu;
    row.new_count = x.count;
  }
  for (const auto& [k, row] : xrows) {
    b.xids.push_back(row);
    if (row.new_count <= row.old_count) continue;  // fewer: another window or a reboot
    const std::string subject = "Xid " + std::to_string(row.xid) + " " + row.bus_id;
    const std::string msg = subject + ": " + std::to_string(row.new_count - row.old_count) +
                            " more line(s) than in the baseline (" + std::to_string(row.old_count) +
                            " → " + std::to_string(row.new_count) + "), class " + row.cls;
    const std::string fix =
        "fabcheck node's kernel_log.xid_* finding says what the Xid means and "
        "what to do";
    // Application Xids are notes in the node report (xid_catalog.cc: the peers ignore them), so
    // more of them are no warning here either.
    const bool note = row.cls == "informational" || row.cls == "application";
    if (!row.on_gpu && !note)
      b.findings.push_back(warn(
          "baseline.xid_new", subject,
          msg + "; " + row.bus_id + " is not a GPU of the new report's node: not draining on it",
          "fabcheck node's kernel_log.not_a_gpu finding says why"));
    else if (row.cls == "drain" || row.cls == "by_message")
      b.findings.push_back(fail("baseline.xid_new", subject, msg, fix));
    else
      b.findings.push_back(info("baseline.xid_new", subject, msg, fix));
  }
  return b;
}

Json pcie_baseline_to_json(const PcieBaseline& b) {
  auto opt = [](const auto& v) { return v ? Json(*v) : Json(nullptr); };
  Json links = Json::array();
  for (const auto& r : b.links) {
    Json old_aer = Json::array(), new_aer = Json::array();
    for (int k = 0; k < 3; ++k) {
      old_aer.push_back(r.old_aer[k] ? Json(static_cast<int64_t>(*r.old_aer[k])) : Json(nullptr));
      new_aer.push_back(r.new_aer[k] ? Json(static_cast<int64_t>(*r.new_aer[k])) : Json(nullptr));
    }
    links.push_back({{"bus_id", r.bus_id},
                     {"role", r.role},
                     {"old_present", r.old_present},
                     {"new_present", r.new_present},
                     {"old_gen", opt(r.old_gen)},
                     {"old_lanes", opt(r.old_lanes)},
                     {"new_gen", opt(r.new_gen)},
                     {"new_lanes", opt(r.new_lanes)},
                     {"old_aer", old_aer},
                     {"new_aer", new_aer}});
  }
  Json xids = Json::array();
  for (const auto& x : b.xids)
    xids.push_back({{"xid", x.xid},
                    {"bus_id", x.bus_id},
                    {"class", x.cls},
                    {"old_count", x.old_count},
                    {"new_count", x.new_count}});
  return {{"links", links}, {"xids", xids}};
}

std::string pcie_baseline_table_text(const PcieBaseline& b) {
  std::ostringstream out;
  if (!b.links.empty()) {
    out << "PCIe links, baseline vs new (current link; AER totals correctable/non-fatal/fatal)\n";
    Table t({{"device"}, {"role"}, {"old"}, {"new"}, {"old AER"}, {"new AER"}});
    for (const auto& r : b.links)
      t.add_row({r.bus_id, r.role, r.old_present ? link_text(r.old_gen, r.old_lanes) : "absent",
                 r.new_present ? link_text(r.new_gen, r.new_lanes) : "absent", aer_text(r.old_aer),
                 aer_text(r.new_aer)});
    t.render(out);
  }
  if (!b.xids.empty()) {
    out << "Xids, baseline vs new (lines in each report's kernel log window)\n";
    Table t({{"Xid", Align::kRight},
             {"GPU"},
             {"class"},
             {"old", Align::kRight},
             {"new", Align::kRight}});
    for (const auto& x : b.xids)
      t.add_row({std::to_string(x.xid), x.bus_id, x.cls, std::to_string(x.old_count),
                 std::to_string(x.new_count)});
    t.render(out);
  }
  return out.str();
}

}  // namespace fabkit::reports::baseline
