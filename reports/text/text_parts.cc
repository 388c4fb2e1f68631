#include "reports/text/text_parts.h"

#include <cstdio>

namespace fabkit::reports::text {

std::string fixed(const Json& j, int digits) {
  if (!j.is_number()) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, j.get<double>());
  return buf;
}

std::string str(const Json& j, const std::string& otherwise) {
  return j.is_string() ? j.get<std::string>() : otherwise;
}

}  // namespace fabkit::reports::text
