// The gather for controller_budget.h: raises RLIMIT_NOFILE's soft limit to the hard one, then
// reads the limits that bound how many pair runs this process can hold at once.
#pragma once

#include "slurm/controller_budget.h"

namespace fabkit::slurm {

ControllerLimits gather_controller_limits();

}  // namespace fabkit::slurm
