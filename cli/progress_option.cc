#include "cli/progress_option.h"

#include <unistd.h>

namespace fabkit::cli {

void add_no_progress_flag(CLI::App* sub, bool* no_progress) {
  sub->add_flag("--no-progress", *no_progress,
                "No progress line on stderr (it is drawn only when stderr is a terminal)");
}

std::unique_ptr<reports::term::MeasureProgress> make_progress(bool no_progress) {
  reports::term::MeasureProgressOptions o;
  o.fd = STDERR_FILENO;
  o.enabled = !no_progress;
  return std::make_unique<reports::term::MeasureProgress>(o);
}

}  // namespace fabkit::cli
