// What a --sysroot run could not read for a reason other than absence (common/root_open.h): a
// link that leads out of the tree, a FIFO, socket or device, a symlink loop. The probes treated
// each as absent; the report names each one, so a capture that is not what it seems says so.
#pragma once

#include <vector>

#include "common/finding.h"
#include "common/root_open.h"

namespace fabkit::probes {

// One sysroot.file_refused (warn) per path.
std::vector<Finding> judge_sysroot_refusals(const std::vector<TreeRefusal>& refusals);

}  // namespace fabkit::probes
