// Prometheus families of the node report's `gpu_active` section (`fabcheck node --active`): the
// measured figures in base units and their fractions of the expected ones. None when the section
// is absent.
#pragma once

#include <vector>

#include "common/json.h"
#include "reports/prom/prom_text.h"

namespace fabkit::reports::prom {

// Throws std::invalid_argument naming a field of the wrong type.
std::vector<Family> gpu_active_families(const Json& node_report);

}  // namespace fabkit::reports::prom
