#include "probes/sysroot_refusals.h"

namespace fabkit::probes {

std::vector<Finding> judge_sysroot_refusals(const std::vector<TreeRefusal>& refusals) {
  std::vector<Finding> out;
  for (const auto& r : refusals)
    out.push_back(warn("sysroot.file_refused", r.path,
                       "not read: " + r.reason +
                           ". The probes took it as absent, so what depends on it is unknown",
                       "capture the file's contents in its place (`cp -L` on the captured "
                       "machine, or a ttar `Lines:` record); a capture holds regular files, "
                       "directories and symlinks that resolve inside it"));
  return out;
}

}  // namespace fabkit::probes
