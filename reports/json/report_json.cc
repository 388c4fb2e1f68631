#include "common/report_json.h"
#include "reports/report_render.h"

namespace fabkit::reports {

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
