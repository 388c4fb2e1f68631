// Renderers: the only code that turns a Report into bytes for a person or a program.
#pragma once

#include <ostream>

#include "common/json.h"
#include "common/report.h"
#include "common/report_json.h"

namespace fabkit::reports {

// The report's JSON document (common/report_json.h), indented.
void render_json(const Report& r, std::ostream& out);
// A header line, the kind's own tables (node facts, pair, group, cluster, plan), then one line
// per finding with its fix, worst first, and the exit code they imply.
void render_text(const Report& r, std::ostream& out);
// color: severity labels and codes in ANSI colors. Callers decide with color_enabled().
// tables: text another renderer made for this report (a baseline's side-by-side figures), printed
// after the kind's own tables and before the findings.
void render_text(const Report& r, std::ostream& out, bool color, const std::string& tables = "");
// Color only on a terminal and never when NO_COLOR is set non-empty (no-color.org). Pure, so the
// is-a-TTY decision can be injected in tests.
bool color_enabled(bool is_tty, const char* no_color);
// Renders as JSON or text (colored when out is stdout and color_enabled) and returns the exit
// code the findings imply (0 or 1): the tail of every report-producing subcommand.
// tables: as for render_text (ignored under --json, where the sections carry the figures).
int render_report(const Report& r, bool json, std::ostream& out, const std::string& tables = "");
// A usage/internal error as JSON when --json was asked, so scripts always get JSON.
void render_error_json(const std::string& kind, int exit_code, const std::string& message,
                       std::ostream& out);

}  // namespace fabkit::reports
