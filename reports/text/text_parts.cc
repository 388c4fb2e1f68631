#include "reports/text/text_parts.h"

#include <cstdio>

#include "reports/text/terminal_safe.h"

namespace fabkit::reports::text {

std::string fixed(const Json& j, int digits) {
  if (!j.is_number()) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, j.get<double>());
  return buf;
}

std::string str(const Json& j, const std::string& otherwise) {
  // Documents rendered here may come from anywhere (`fabcheck report FILE`): terminal-safe.
  return j.is_string() ? terminal_safe(j.get<std::string>()) : otherwise;
}

}  // namespace fabkit::reports::text
