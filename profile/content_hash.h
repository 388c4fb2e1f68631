// The profile's content hash (docs/profile.md, "Content hash"): what the reader checks and the
// writer (profile/profile_document.h) stamps.
#pragma once

#include <string>

#include "common/json.h"

namespace fabkit::profile {

// "sha256:" + hex SHA-256 of the canonical content: the document without its "provenance"
// member, serialized compactly with object keys sorted (nlohmann::json::dump(), no indentation,
// UTF-8 as is).
std::string content_hash(const Json& document);

}  // namespace fabkit::profile
