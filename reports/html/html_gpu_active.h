// The HTML node page's active GPU check (`gpu_active` section): per GPU a table of each figure
// measured, expected and the fraction, then the all-reduce runs.
#pragma once

#include <string>

#include "common/json.h"

namespace fabkit::reports::html {

// An HTML fragment; throws std::invalid_argument naming the field of a malformed section.
std::string gpu_active_section(const Json& section);

}  // namespace fabkit::reports::html
