// The CLI's side of measurement progress (docs/reports.md, "Progress"): the subcommands that
// measure for more than a second take --no-progress, and create the stderr renderer that the
// gatherers report to through common/progress.h. The CLI decides; gather code never sees reports/.
#pragma once

#include <memory>

#include <CLI/CLI.hpp>

#include "reports/term/measure_progress.h"

namespace fabkit::cli {

void add_no_progress_flag(CLI::App* sub, bool* no_progress);

// Draws on stderr only when stderr is a terminal and no_progress is false; otherwise it writes
// nothing. Destroy it (or let it go out of scope) before printing the result.
std::unique_ptr<reports::term::MeasureProgress> make_progress(bool no_progress);

}  // namespace fabkit::cli
