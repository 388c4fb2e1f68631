#include <iomanip>

#include "common/build_info.h"
#include "reports/report_render.h"

namespace fabkit::reports {

void render_text(const Report& r, std::ostream& out) {
  out << "fabcheck " << r.kind << " — " << r.hostname << " — " << r.generated_at << " (fabkit "
      << fabkit_version() << ")\n";
  const Severity order[] = {Severity::kFail, Severity::kWarn, Severity::kInfo};
  const char* titles[] = {"FAIL", "WARN", "INFO"};
  int shown = 0;
  for (int i = 0; i < 3; ++i) {
    bool header = false;
    for (const auto& f : r.findings) {
      if (f.severity != order[i]) continue;
      if (!header) {
        out << "\n" << titles[i] << "\n";
        header = true;
      }
      out << "  [" << f.code << "] " << f.subject << ": " << f.message << "\n";
      if (!f.fix.empty()) out << "      fix: " << f.fix << "\n";
      ++shown;
    }
  }
  if (shown == 0) out << "\nno findings\n";
  int code = exit_code_for(r.findings);
  out << "\nresult: " << (code == kExitClean ? "clean" : "findings at warn or worse")
      << " (exit " << code << "); --json for the gathered facts\n";
}

int render_report(const Report& r, bool json, std::ostream& out) {
  if (json)
    render_json(r, out);
  else
    render_text(r, out);
  return exit_code_for(r.findings);
}

}  // namespace fabkit::reports
