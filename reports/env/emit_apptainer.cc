// Apptainer passes APPTAINERENV_<NAME> from the host into the container as <NAME>; unlike
// `--env A=1,B=2` this carries values that contain commas (NCCL_IB_HCA lists). Apptainer already
// shares the host's network, /dev and /dev/shm and keeps the host's limits, so the flags left
// are binds for files the job reads (nccl.conf, the topology file).
#include "reports/env/emitter.h"

namespace fabkit::reports::env {
using namespace profile;  // the resolved settings' types

std::string emit_apptainer(const EmitInput& in) {
  // --bind SRC[:DST[:OPTS]][,SRC...]: a ',' starts another bind (a bind of "/etc,/srv" would
  // become a read-write bind of /etc), a ':' ends the source.
  // Devices need no flag: apptainer shares the host's /dev.
  check_container_paths(in.container.binds, "bind", "apptainer",
                        ",:", "apptainer's `--bind SRC:DST:OPTS,...`");
  std::string out = comment_header(in, "apptainer");
  out += "# Usage: source this file on the host, then: apptainer exec $FABKIT_APPTAINER_FLAGS "
         "IMAGE CMD\n";
  if (in.container.memlock_unlimited)
    out += "# memlock: the container keeps the host's limit; it must be unlimited on the host "
           "(`ulimit -l`; fabcheck validate checks it)\n";
  for (const auto& r : in.settings)
    if (r.setting.value)
      out += "export APPTAINERENV_" + r.name + "=" + sh_quote(*r.setting.value) + "\n";
  std::string flags;
  for (const auto& b : in.container.binds) flags += (flags.empty() ? "" : " ") + std::string("--bind ") + b + ":" + b + ":ro";
  out += "export FABKIT_APPTAINER_FLAGS=" + sh_quote(flags) + "\n";
  return out;
}

}  // namespace fabkit::reports::env
