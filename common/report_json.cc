// The report envelope <-> JSON: the one document every report kind shares. It sits beside the
// Report type so that code below reports/ (the agent answering a node report, the cluster judge
// reading the agents' reports) can carry documents without depending on the renderers.
#include "common/report_json.h"

#include <stdexcept>

#include "common/build_info.h"

namespace fabkit {

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

}  // namespace fabkit
