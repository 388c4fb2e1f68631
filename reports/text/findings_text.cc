// The text report: a header line, the kind's own tables (pair, cluster…), then one line per
// finding with its fix, worst first, and the exit code they imply.
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "common/build_info.h"
#include "reports/report_render.h"
#include "reports/text/nccl_log_text.h"
#include "reports/text/table.h"
#include "reports/text/terminal_safe.h"
#include "reports/text/text_parts.h"

namespace fabkit::reports {
namespace {

using text::Align;
using text::Table;

void render_findings(const std::vector<Finding>& findings, std::ostream& out,
                     const text::Style& style) {
  const Severity order[] = {Severity::kFail, Severity::kWarn, Severity::kInfo};
  Table t({{"severity"}, {"code"}, {"finding (subject: message; fix)"}});
  for (Severity sev : order)
    for (const auto& f : findings) {
      if (f.severity != sev) continue;
      const std::string label = sev == Severity::kFail   ? style.bad("FAIL")
                                : sev == Severity::kWarn ? style.warn("WARN")
                                                         : style.note("INFO");
      // Subjects and messages quote what was read (an NCCL log line, an interface name, a
      // document given to `fabcheck report`): shown, never interpreted by the terminal.
      t.add_row({label, text::terminal_safe(f.code),
                 text::terminal_safe(f.subject + ": " + f.message +
                                     (f.fix.empty() ? "" : "; fix: " + f.fix))});
    }
  if (t.empty()) {
    out << "\nno findings\n";
    return;
  }
  out << "\nfindings\n";
  t.render(out);
}

}  // namespace

bool color_enabled(bool is_tty, const char* no_color) {
  // https://no-color.org: NO_COLOR set to a non-empty value turns color off whatever the terminal.
  if (no_color != nullptr && no_color[0] != '\0') return false;
  return is_tty;
}

void render_text(const Report& r, std::ostream& out) { render_text(r, out, false); }

void render_text(const Report& r, std::ostream& out, bool color, const std::string& tables) {
  const text::Style style{color};
  out << "fabcheck " << text::terminal_safe(r.kind) << " — " << text::terminal_safe(r.hostname)
      << " — " << text::terminal_safe(r.generated_at) << " (fabkit " << fabkit_version() << ")\n";
  if (r.kind == "node") {
    out << "\n";
    text::render_node_facts(r, out, style);
  }
  for (const auto& s : r.sections) {
    if (s.name == "plan") {  // --plan-only: nothing ran, so there are no findings to list
      out << "\n";
      text::render_plan_section(s.facts, out);
      return;
    }
    if (s.name == "nccl_log") {
      out << "\n";
      text::render_nccl_log_section(s.facts, out, style);
      continue;
    }
    if (s.name != "pair" && s.name != "pair_group" && s.name != "cluster") continue;
    out << "\n";
    if (s.name == "pair") text::render_pair_section(s.facts, out, style);
    if (s.name == "pair_group") text::render_pair_group_section(s.facts, out, style);
    if (s.name == "cluster") text::render_cluster_section(s.facts, out, style);
  }
  if (!tables.empty()) out << "\n" << tables;
  render_findings(r.findings, out, style);
  const int code = exit_code_for(r.findings);
  out << "\nresult: " << (code == kExitClean ? "clean" : "findings at warn or worse") << " (exit "
      << code << "); --json for the gathered facts\n";
}

int render_report(const Report& r, bool json, std::ostream& out, const std::string& tables) {
  if (json)
    render_json(r, out);
  else
    render_text(
        r, out,
        &out == &std::cout && color_enabled(::isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR")),
        tables);
  return exit_code_for(r.findings);
}

}  // namespace fabkit::reports
