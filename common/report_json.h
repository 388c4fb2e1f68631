// A Report as its JSON document and back: {"schema_version": N, "kind", "hostname",
// "generated_at", "build", "summary", "findings": [...], "<section>": {...}, ...}.
#pragma once

#include "common/json.h"
#include "common/report.h"

namespace fabkit {

// schema_version is always the first key.
Json report_to_json(const Report& r);
// Throws std::invalid_argument naming the field.
Report report_from_json(const Json& j);

}  // namespace fabkit
