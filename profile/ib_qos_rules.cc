#include "profile/ib_qos_rules.h"

namespace fabkit::profile {
namespace {

const Json& at(const Json& j, const char* k) {
  static const Json kNull;
  return j.is_object() && j.contains(k) ? j[k] : kNull;
}

std::string text(const Json& j, const std::string& dflt) {
  return j.is_string() ? j.get<std::string>() : dflt;
}

}  // namespace

std::optional<bool> sl_reaches_data_vl(const Json& port, int sl, int* vl) {
  const Json& t = at(port, "sl2vl");
  if (text(at(port, "status"), "") != "ok" || !t.is_array() || t.size() != 16 || sl < 0 ||
      sl > 15 || !t[sl].is_number_integer())
    return std::nullopt;
  const int v = t[sl].get<int>();
  if (vl) *vl = v;
  const Json& data_vls = at(at(port, "port_info"), "data_vls");
  // OperationalVLs 0 (not set by an SM) says nothing: only VL15 is known to drop.
  const int n = data_vls.is_number_integer() ? data_vls.get<int>() : 0;
  return v != 15 && (n == 0 || v < n);
}

IbSlChoice path_record_sl(const Json& port) {
  IbSlChoice c;
  const std::string status = text(at(port, "status"), "absent");
  if (status != "ok") {
    c.why = "the SL-to-VL table was not read (" + status + ")";
    return c;
  }
  const Json& paths = at(port, "path_records");
  const Json& rec = paths.is_array() && !paths.empty() ? at(paths[0], "record") : Json();
  if (!at(rec, "sl").is_number_integer()) {
    c.why = "no PathRecord from the SA (" +
            text(paths.is_array() && !paths.empty() ? at(paths[0], "status") : Json(), "no SM") +
            ")";
    return c;
  }
  const int sl = at(rec, "sl").get<int>();
  int vl = -1;
  auto reaches = sl_reaches_data_vl(port, sl, &vl);
  const std::string oper = text(at(at(port, "port_info"), "oper_vls"), "?");
  if (!reaches || !*reaches) {
    c.why = "the SM's PathRecord SL " + std::to_string(sl) + " maps to VL" + std::to_string(vl) +
            ", which carries no data (OperationalVLs " + oper + ")";
    return c;
  }
  c.sl = sl;
  c.why = "the SM's PathRecord SL " + std::to_string(sl) + " -> VL" + std::to_string(vl) +
          " (OperationalVLs " + oper + ")";
  return c;
}

}  // namespace fabkit::profile
