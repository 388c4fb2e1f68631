// A block to paste at the top of an sbatch script. `#SBATCH --export=ALL,K=V,...` carries the
// values sbatch can parse: it splits the option on ',', so a value with a comma (NCCL_IB_HCA
// lists) goes only in the `export` lines below, which bash runs in the batch step and srun steps
// inherit. Both forms carry identical values for the variables they share.
#include "reports/env/emitter.h"

namespace fabkit::reports::env {
using namespace profile;  // the resolved settings' types

std::string emit_slurm(const EmitInput& in) {
  std::string out = "#!/bin/bash\n";
  std::string exports = "ALL";
  for (const auto& r : in.settings)
    if (r.setting.value && r.setting.value->find(',') == std::string::npos)
      exports += "," + r.name + "=" + *r.setting.value;
  // sbatch reads #SBATCH lines only before the first command, so they come first.
  out += "#SBATCH --export=" + exports + "\n";
  out += comment_header(in, "slurm");
  for (const auto& r : in.settings)
    if (r.setting.value) out += "export " + r.name + "=" + sh_quote(*r.setting.value) + "\n";
  return out;
}

}  // namespace fabkit::reports::env
