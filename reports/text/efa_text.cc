// Text of a node report's `efa` section: the instance, its EFA devices against the count its type
// has, and the huge page pool; the per-device table only when a device is not ACTIVE (a healthy
// p5 would otherwise print 32 identical rows after the RDMA table that already lists them).
#include "reports/json_scalar_text.h"
#include "reports/text/table.h"
#include "reports/text/text_parts.h"

namespace fabkit::reports::text {
namespace {

std::string or_dash(const Json& j) { return json_scalar_text(j, "-"); }

}  // namespace

void render_efa(const Report& r, std::ostream& out, const Style& style) {
  for (const auto& s : r.sections) {
    if (s.name != "efa") continue;
    const Json& devices = member(s.facts, "devices");
    const Json& inst = member(s.facts, "instance");
    const bool any = devices.is_array() && !devices.empty();
    if (!any && !inst.is_object()) return;  // not an EFA node: nothing to say
    const Json& want = member(inst, "efa_devices");
    const std::string have = or_dash(member(s.facts, "device_count"));
    std::string count = have;
    if (want.is_number_integer()) {
      count += " of " + want.dump();
      if (member(s.facts, "device_count") != want) count = style.bad(count);
    }
    out << "\nEFA: " << str(member(s.facts, "product_name"), "instance type unknown") << ", "
        << count << " EFA devices";
    if (inst.is_object())
      out << ", device RDMA " << (member(inst, "device_rdma") == true ? "yes" : "no");
    out << "; huge pages " << or_dash(member(s.facts, "hugepages_free")) << " free of "
        << or_dash(member(s.facts, "hugepages_total")) << "\n";
    bool all_active = true;
    for (const auto& d : devices) all_active = all_active && member(d, "state") == "ACTIVE";
    if (all_active) return;
    Table t({{"device"}, {"state"}, {"pci"}, {"numa", Align::kRight}, {"nearest GPU"}});
    for (const auto& d : devices) {
      const std::string state = str(member(d, "state"));
      t.add_row({str(member(d, "name")), state == "ACTIVE" ? state : style.bad(state),
                 str(member(d, "bus_id")), or_dash(member(d, "numa_node")),
                 str(member(d, "nearest_gpu")) + " " + str(member(d, "nearest_gpu_path"), "")});
    }
    t.render(out);
    return;
  }
}

}  // namespace fabkit::reports::text
