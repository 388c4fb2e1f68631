#include "slurm/health_action.h"

#include <sys/wait.h>

#include <stdexcept>

#include "common/errors.h"
#include "fabric/launch/child_process.h"

namespace fabkit::slurm {

void apply_drain(const HealthDecision& d, int timeout_ms) {
  if (!d.drain) return;
  launch::ChildOptions o;
  o.argv = d.scontrol_argv;
  o.search_path = true;
  o.own_process_group = true;
  o.stdout_is_log = true;
  o.stderr_into_stdout = true;
  launch::ChildProcess child(o);
  std::string how = child.wait_exit(wire::deadline_in_ms(timeout_ms));
  int st = child.exit_status();
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    throw std::runtime_error("`scontrol update NodeName=" + d.node + " State=DRAIN` ended with " +
                             how + " (bound " + std::to_string(timeout_ms) +
                             " ms): " + child.log().substr(0, 600) +
                             "; is slurmctld reachable from this node (scontrol ping)?");
}

}  // namespace fabkit::slurm
