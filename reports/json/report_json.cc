#include <stdexcept>

#include "common/build_info.h"
#include "reports/report_render.h"

namespace fabkit::reports {

Json report_to_json(const Report& r) {
  Json j;
  j["schema_version"] = kReportSchemaVersion;
  j["kind"] = r.kind;
  j["hostname"] = r.hostname;
  j["generated_at"] = r.generated_at;
  j["build"] = build_info_json();
  int counts[3] = {0, 0, 0};
  for (const auto& f : r.findings) counts[static_cast<int>(f.severity)]++;
  j["summary"] = {{"fail", counts[2]},
                  {"warn", counts[1]},
                  {"info", counts[0]},
                  {"exit_code", exit_code_for(r.findings)}};
  Json fs = Json::array();
  for (const auto& f : r.findings) fs.push_back(to_json(f));
  j["findings"] = fs;
  for (const auto& s : r.sections) j[s.name] = s.facts;
  return j;
}

Report report_from_json(const Json& j) {
  if (!j.is_object()) throw std::invalid_argument("report: top level must be a JSON object");
  if (!j.contains("schema_version") || !j["schema_version"].is_number_integer())
    throw std::invalid_argument("report: field 'schema_version' missing or not an integer");
  int v = j["schema_version"].get<int>();
  if (v > kReportSchemaVersion || v < 1)
    throw std::invalid_argument("report: schema_version " + std::to_string(v) +
                                " is not supported (this fabkit reads 1.." +
                                std::to_string(kReportSchemaVersion) + "); upgrade fabkit");
  Report r;
  auto str = [&](const char* k) {
    if (!j.contains(k) || !j[k].is_string())
      throw std::invalid_argument(std::string("report: field '") + k + "' missing or not a string");
    return j[k].get<std::string>();
  };
  r.kind = str("kind");
  r.hostname = str("hostname");
  r.generated_at = str("generated_at");
  if (!j.contains("findings") || !j["findings"].is_array())
    throw std::invalid_argument("report: field 'findings' missing or not an array");
  for (size_t i = 0; i < j["findings"].size(); ++i) {
    try {
      r.findings.push_back(finding_from_json(j["findings"][i]));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("report: findings[" + std::to_string(i) + "]: " + e.what());
    }
  }
  static const char* kEnvelope[] = {"schema_version", "kind",    "hostname", "generated_at",
                                    "build",          "summary", "findings"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool envelope = false;
    for (const char* k : kEnvelope) envelope = envelope || it.key() == k;
    if (!envelope) r.sections.push_back({it.key(), it.value()});
  }
  return r;
}

// Facts quote files, logs and environment values verbatim, which may hold non-UTF-8 bytes (a
// Latin-1 interface alias, a binary log). nlohmann throws on those by default; replace them with
// U+FFFD instead so a report is always written.
static std::string dump_safe(const Json& j) {
  return j.dump(2, ' ', false, Json::error_handler_t::replace);
}

void render_json(const Report& r, std::ostream& out) { out << dump_safe(report_to_json(r)) << "\n"; }

void render_error_json(const std::string& kind, int exit_code, const std::string& message,
                       std::ostream& out) {
  Json j;
  j["schema_version"] = kReportSchemaVersion;
  j["kind"] = kind;
  j["error"] = {{"exit_code", exit_code}, {"message", message}};
  out << dump_safe(j) << "\n";
}

}  // namespace fabkit::reports
