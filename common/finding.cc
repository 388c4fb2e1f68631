#include "common/finding.h"

#include <stdexcept>

namespace fabkit {

const char* to_string(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarn: return "warn";
    case Severity::kFail: return "fail";
  }
  return "unknown";
}

std::optional<Severity> severity_from_string(const std::string& s) {
  if (s == "info") return Severity::kInfo;
  if (s == "warn") return Severity::kWarn;
  if (s == "fail") return Severity::kFail;
  return std::nullopt;
}

static Finding make(Severity sev, std::string code, std::string subject, std::string message,
                    std::string fix) {
  return Finding{sev, std::move(code), std::move(subject), std::move(message), std::move(fix)};
}

Finding info(std::string code, std::string subject, std::string message, std::string fix) {
  return make(Severity::kInfo, std::move(code), std::move(subject), std::move(message),
              std::move(fix));
}
Finding warn(std::string code, std::string subject, std::string message, std::string fix) {
  return make(Severity::kWarn, std::move(code), std::move(subject), std::move(message),
              std::move(fix));
}
Finding fail(std::string code, std::string subject, std::string message, std::string fix) {
  return make(Severity::kFail, std::move(code), std::move(subject), std::move(message),
              std::move(fix));
}

Severity worst_severity(const std::vector<Finding>& findings) {
  Severity worst = Severity::kInfo;
  for (const auto& f : findings)
    if (f.severity > worst) worst = f.severity;
  return worst;
}

Json to_json(const Finding& f) {
  return Json{{"severity", to_string(f.severity)},
              {"code", f.code},
              {"subject", f.subject},
              {"message", f.message},
              {"fix", f.fix}};
}

Finding finding_from_json(const Json& j) {
  auto str = [&](const char* key) -> std::string {
    if (!j.contains(key) || !j.at(key).is_string())
      throw std::invalid_argument(std::string("finding: field '") + key + "' missing or not a string");
    return j.at(key).get<std::string>();
  };
  Finding f;
  auto sev = severity_from_string(str("severity"));
  if (!sev) throw std::invalid_argument("finding: field 'severity' must be info, warn or fail");
  f.severity = *sev;
  f.code = str("code");
  f.subject = str("subject");
  f.message = str("message");
  f.fix = str("fix");
  return f;
}

}  // namespace fabkit
