#include <unistd.h>

#include <cstdlib>
#include <iomanip>
#include <iostream>

#include "common/build_info.h"
#include "reports/report_render.h"

namespace fabkit::reports {

bool color_enabled(bool is_tty, const char* no_color) {
  // https://no-color.org: NO_COLOR set to a non-empty value turns color off whatever the terminal.
  if (no_color != nullptr && no_color[0] != '\0') return false;
  return is_tty;
}

void render_text(const Report& r, std::ostream& out) { render_text(r, out, false); }

void render_text(const Report& r, std::ostream& out, bool color) {
  // SGR: bold red, bold yellow, cyan; reset after each label so a pager never keeps a color.
  const char* colors[] = {"\033[1;31m", "\033[1;33m", "\033[36m"};
  const char* reset = color ? "\033[0m" : "";
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
        out << "\n" << (color ? colors[i] : "") << titles[i] << reset << "\n";
        header = true;
      }
      out << "  [" << (color ? colors[i] : "") << f.code << reset << "] " << f.subject << ": "
          << f.message << "\n";
      if (!f.fix.empty()) out << "      fix: " << f.fix << "\n";
      ++shown;
    }
  }
  if (shown == 0) out << "\nno findings\n";
  int code = exit_code_for(r.findings);
  out << "\nresult: " << (code == kExitClean ? "clean" : "findings at warn or worse") << " (exit "
      << code << "); --json for the gathered facts\n";
}

int render_report(const Report& r, bool json, std::ostream& out) {
  if (json)
    render_json(r, out);
  else
    render_text(
        r, out,
        &out == &std::cout && color_enabled(::isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR")));
  return exit_code_for(r.findings);
}

}  // namespace fabkit::reports
