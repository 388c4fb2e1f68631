// One JSON type for every document fabkit writes: ordered, so `schema_version` stays the first
// key and reports diff cleanly between runs.
#pragma once

#include <nlohmann/json.hpp>

namespace fabkit {
using Json = nlohmann::ordered_json;
}  // namespace fabkit
