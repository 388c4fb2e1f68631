// Runs the drain a health decision asks for: `scontrol update NodeName=… State=DRAIN Reason=…`
// as a child process (no shell), bounded by timeout_ms, since a health check that hangs on a
// wedged slurmctld would hold the node past Slurm's HealthCheckProgram limit.
#pragma once

#include "slurm/health.h"

namespace fabkit::slurm {

// Throws SysErrorException when scontrol cannot be started, std::runtime_error naming its exit and
// stderr when it fails or does not finish within timeout_ms.
void apply_drain(const HealthDecision& d, int timeout_ms);

}  // namespace fabkit::slurm
