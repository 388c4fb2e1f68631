// `fabtrain control`'s text: a job's status line and the table of jobs `list` shows. The client
// (trainer/control/control_client.cc) gathers the replies; this renders them.
#pragma once

#include <string>

#include "common/json.h"

namespace fabkit::reports::text {

// "step 120/1000  loss 2.3457  tokens/s 12345  ETA 3m07s  (training, pending none)" from a
// status reply's "status" object (docs/fabtrain.md, "Control"); "--" for figures not there yet.
std::string control_status_line(const Json& status);

// jobs: the `list --json` rows ({job, state, pid, output_dir, status|null}). An aligned table,
// each job's output directory under it, and the hint to clean up stale endpoints when one is.
std::string render_job_list(const Json& jobs);

}  // namespace fabkit::reports::text
