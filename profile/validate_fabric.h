// `fabcheck validate`: the node's fabric stack against what the profile recorded (docs/efa.md).
#pragma once

#include <vector>

#include "common/finding.h"
#include "common/report.h"
#include "profile/profile.h"

namespace fabkit::profile {

// node: this host's entry in the profile, or null (a host the profile does not name: compared
// with the value every recorded node shares, when they agree).
void check_fabric_drift(const Profile& p, const NodeEntry* node, const Report& r,
                        std::vector<Finding>& out);

}  // namespace fabkit::profile
