// A report field as the text a table cell shows: a string as itself, any other value as its JSON
// (numbers, booleans, arrays), null as the renderer's placeholder (text tables "-", HTML empty).
#pragma once

#include <string>

#include "common/json.h"

namespace fabkit::reports {

inline std::string json_scalar_text(const Json& j, const std::string& if_null) {
  if (j.is_null()) return if_null;
  return j.is_string() ? j.get<std::string>() : j.dump();
}

}  // namespace fabkit::reports
