// Text of the node report's `gpu_active` section (`fabcheck node --active`): per GPU a table of
// each figure measured, expected and the fraction, then the all-reduce runs.
#pragma once

#include <ostream>

#include "common/json.h"
#include "reports/text/text_parts.h"

namespace fabkit::reports::text {

// Prints nothing when section is not an object (the check did not run).
void render_gpu_active(const Json& section, std::ostream& out, const Style& style);

}  // namespace fabkit::reports::text
