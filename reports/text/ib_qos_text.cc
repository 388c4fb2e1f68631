// Text of a node report's `ib_qos` section: per IB port the SL NCCL uses, the VL it reaches,
// OperationalVLs, the SM's PathRecord SL, and whether the MADs could be sent.
#include "reports/json_scalar_text.h"
#include "reports/text/table.h"
#include "reports/text/text_parts.h"

namespace fabkit::reports::text {
namespace {

std::string or_dash(const Json& j) { return json_scalar_text(j, "-"); }

}  // namespace

void render_ib_qos(const Report& r, std::ostream& out, const Style& style) {
  for (const auto& s : r.sections) {
    if (s.name != "ib_qos") continue;
    const Json& ports = member(s.facts, "ports");
    if (!ports.is_array() || ports.empty()) return;  // no IB port: nothing to say
    const std::string source = str(member(s.facts, "source"));
    const Json& sl = member(s.facts, "nccl_sl");
    out << "\nIB QoS (the VL NCCL's SL " << or_dash(sl) << " reaches; "
        << (source == "sysroot" ? "MADs not sent under --sysroot" : "MADs: " + source) << ")\n";
    Table t({{"port"},
             {"VL", Align::kRight},
             {"OperVLs"},
             {"VLCap"},
             {"path SL", Align::kRight},
             {"SL2VL (SL 0..15)"},
             {"status"}});
    for (const auto& p : ports) {
      const Json& pi = member(p, "port_info");
      const Json& vl = member(p, "nccl_vl");
      const Json& data_vls = member(pi, "data_vls");
      std::string vl_text = or_dash(vl);
      if (vl.is_number_integer() &&
          (vl.get<int>() == 15 || (data_vls.is_number_integer() && data_vls.get<int>() > 0 &&
                                   vl.get<int>() >= data_vls.get<int>())))
        vl_text = style.bad(vl_text + " DROPPED");
      std::string path_sl = "-";
      const Json& paths = member(p, "path_records");
      if (paths.is_array() && !paths.empty())
        path_sl = or_dash(member(member(paths[0], "record"), "sl"));
      std::string table = "-";
      if (member(p, "sl2vl").is_array()) {
        table.clear();
        for (const auto& v : member(p, "sl2vl")) table += (table.empty() ? "" : ",") + v.dump();
      }
      t.add_row({str(member(p, "device")) + ":" + or_dash(member(p, "port")), vl_text,
                 or_dash(member(pi, "oper_vls")), or_dash(member(pi, "vl_cap")), path_sl, table,
                 str(member(p, "status"))});
    }
    t.render(out);
  }
}

}  // namespace fabkit::reports::text
