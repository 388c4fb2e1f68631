#include "common/report.h"

#include <unistd.h>

#include <ctime>

namespace fabkit {

int exit_code_for(const std::vector<Finding>& findings) {
  return worst_severity(findings) >= Severity::kWarn ? kExitFindings : kExitClean;
}

std::string utc_now_rfc3339() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Report new_report(const std::string& kind) {
  Report r;
  r.kind = kind;
  char host[256] = {};
  r.hostname = ::gethostname(host, sizeof host - 1) == 0 ? host : "unknown";
  r.generated_at = utc_now_rfc3339();
  return r;
}

const Json* find_section(const Report& r, const std::string& name) {
  for (const auto& s : r.sections)
    if (s.name == name && s.facts.is_object()) return &s.facts;
  return nullptr;
}

}  // namespace fabkit
