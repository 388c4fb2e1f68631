// Reading a report document that may be hand-edited or from another version: every renderer that
// walks a document's sections (text, Prometheus) reads members through this.
#pragma once

#include "common/json.h"

namespace fabkit::reports {

// j[key], or null when j is not an object or has no such member. nlohmann's const operator[] on
// a missing key is undefined behaviour, not an exception; wrong types still throw nlohmann's
// type_error (the callers name the file or field).
const Json& member(const Json& j, const char* key);

}  // namespace fabkit::reports
