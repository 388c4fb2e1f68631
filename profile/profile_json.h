// Profile <-> JSON text, and the content hash (docs/profile.md, "Content hash").
#pragma once

#include <string>

#include "common/json.h"
#include "profile/profile_model.h"

namespace fabkit::profile {

// The document, schema_version first, provenance.content_hash included as it stands in p.
Json to_json(const Profile& p);
// to_json with provenance.content_hash recomputed: what `fabcheck profile` writes.
std::string serialize_profile(Profile p);
// "sha256:" + hex SHA-256 of the canonical content: the document without its "provenance"
// member, serialized compactly with object keys sorted (nlohmann::json::dump(), no indentation,
// UTF-8 as is).
std::string content_hash(const Json& document);

}  // namespace fabkit::profile
