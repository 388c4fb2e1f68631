#include "reports/prom/prom_fields.h"

#include <stdexcept>

namespace fabkit::reports::prom {

std::optional<double> number(const Json& j, const char* key, const std::string& where) {
  const Json& v = member(j, key);
  if (v.is_null()) return std::nullopt;
  if (!v.is_number())
    throw std::invalid_argument(where + "." + key + " must be a number, got " + v.dump());
  return v.get<double>();
}

std::string string_or(const Json& j, const char* key, const std::string& fallback) {
  const Json& v = member(j, key);
  return v.is_string() ? v.get<std::string>() : fallback;
}

Family findings_family(const char* name, const Json& report) {
  Family f{name, "fabcheck findings by severity (exit 1 when warn or fail > 0)", "gauge", {}};
  double n[3] = {0, 0, 0};
  const Json& fs = member(report, "findings");
  if (!fs.is_array()) throw std::invalid_argument("findings must be an array");
  for (const auto& x : fs) {
    std::string s = string_or(x, "severity", "");
    if (s == "fail")
      ++n[0];
    else if (s == "warn")
      ++n[1];
    else if (s == "info")
      ++n[2];
    else
      throw std::invalid_argument("findings[].severity must be fail, warn or info, got '" + s +
                                  "'");
  }
  f.samples = {{{{"severity", "fail"}}, n[0]},
               {{{"severity", "warn"}}, n[1]},
               {{{"severity", "info"}}, n[2]}};
  return f;
}

}  // namespace fabkit::reports::prom
